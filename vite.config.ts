// One Vite/Vitest configuration for the whole repository, in two projects: "unit", the tests beside the
// code that need no service (the fast loop's set, run as `npm run test:unit` runs them: each worker's
// modules shared between files), and "integration", everything else: the cross-cutting and browser tests
// in tests/ and the tests beside the code that reach PostgreSQL, Redis, Node 24 or Vite, with the services
// of the global setup (their worker's modules shared between files too). The widget's own build config
// lives in widget/vite.config.ts.
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { leftOutOfUnit, NEVER, unitTests } from "./tests/support/unitSelection.ts";

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One test file per core. Vitest's default for a run is one less (a single worker on 2 cores), while
    // these files often wait on processes of their own (Node 24 packages, servers, Chromium). Not yet
    // shown faster: on a loaded 2-core machine it measured the same (docs/testing.md); if it flakes on an
    // idle one, set 1.
    maxWorkers: Math.max(2, availableParallelism()),
    experimental: { fsModuleCache: true },
    reporters: ["default", "./scripts/summaryReporter.ts"],
    projects: [
      { extends: true, test: { name: "unit", ...unitTests(import.meta.dirname) } },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["tests/**/*.test.{ts,tsx}", ...leftOutOfUnit(import.meta.dirname)],
          // tests/faults are slow (several real servers each): `npm run test:faults` runs them; installing
          // the tarballs takes minutes: `npm run test:packaging`.
          exclude: [...NEVER, "tests/faults/**", "tests/packaging/**"],
          // PostgreSQL, Redis and Chromium: the machine's, or started from npm packages on a bare machine.
          globalSetup: ["tests/support/globalSetup.ts"],
          // Each worker imports a module once for all the files it runs, as the unit project does: importing
          // the server anew for each file was 156 s of a 416 s run (about 1.2 s a file, 150 files).
          isolate: false,
        },
      },
    ],
  },
});
