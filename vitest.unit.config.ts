// The fast loop (`npm run test:unit`): the unit tests beside the code that need no browser, no database
// server and no sandboxed Node 24 process. `npm test` still runs everything. A test that reaches the test
// services (tests/support/services.ts) leaves this loop by itself; one that starts Node 24, a Vite build or
// other processes joins RUNS_PROCESSES (tests/support/unitSelection.ts).
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { unitTests } from "./tests/support/unitSelection.ts";

export default defineConfig({
  test: {
    ...unitTests(import.meta.dirname),
    testTimeout: 30_000,
    pool: "forks",
    // One file per core, as in vite.config.ts (Vitest's default leaves one core idle).
    maxWorkers: Math.max(2, availableParallelism()),
    // Transformed modules kept on disk between runs (node_modules/.experimental-vitest-cache), keyed by
    // each file's content: a second run transforms only what changed.
    experimental: { fsModuleCache: true },
    reporters: ["default", "./scripts/summaryReporter.ts"],
  },
});
