// The packaging tests (tests/packaging): the tarballs a tool author installs, tried in an empty folder
// outside the checkout. Installing their dependencies from the npm registry takes minutes, so
// `npm run test:packaging` (run by .ci/run) runs them and `npm test` leaves them out.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/packaging/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 600_000,
    pool: "forks",
    globalSetup: ["tests/support/globalSetup.ts"],
    reporters: ["default"],
  },
});
