// One Vite/Vitest configuration for the whole repository: unit tests beside the code, cross-cutting
// and browser tests in tests/. The widget's own build config lives in widget/vite.config.ts.
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["{shared,sdk,server,adapters,widget,examples}/**/*.test.{ts,tsx}", "tests/**/*.test.{ts,tsx}"],
    // tests/faults are slow (several real servers each): `npm run test:faults` runs them.
    exclude: ["**/node_modules/**", "**/dist/**", "runtime/**", "tests/faults/**", "tests/packaging/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // PostgreSQL, Redis and Chromium: the machine's, or started from npm packages on a bare machine.
    globalSetup: ["tests/support/globalSetup.ts"],
    pool: "forks",
    // One test file per core. Vitest's default for a run is one less (a single worker on 2 cores), while
    // these files often wait on processes of their own (Node 24 packages, servers, Chromium). Not yet
    // shown faster: on a loaded 2-core machine it measured the same (docs/testing.md); if it flakes on an
    // idle one, set 1.
    maxWorkers: Math.max(2, availableParallelism()),
    reporters: ["default", "./scripts/summaryReporter.ts"],
  },
});
