// The slow fault tests (tests/faults): several real `caplo serve` processes on loopback sharing PostgreSQL
// (and Redis), killed, cut off and flooded. Run with `npm run test:faults`; `npm test` leaves them out.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/faults/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // PostgreSQL, Redis and Chromium: the machine's, or started from npm packages on a bare machine.
    globalSetup: ["tests/support/globalSetup.ts"],
    pool: "forks",
    // One file at a time: each starts several servers and their sandboxes on a small machine.
    fileParallelism: false,
    reporters: ["default"],
  },
});
