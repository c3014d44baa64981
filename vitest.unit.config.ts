// The fast loop (`npm run test:unit`): the unit tests beside the code that need no browser, no database
// server and no sandboxed Node 24 process. `npm test` still runs everything. A unit test that comes to
// need one of those moves to tests/ or joins NEEDS_SERVICES below.
import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

/** Tests beside the code that start PostgreSQL clients, Node 24 packages, Vite builds or Chromium. */
const NEEDS_SERVICES = [
  "server/src/cluster/**", // PostgreSQL
  "server/src/store/*.contract.test.ts", // PostgreSQL (each port's contract runs on both stores)
  "server/src/store/postgresStore.test.ts", // PostgreSQL
  "server/src/channels/inbox/{inboxStore.contract,postgresInboxStore,migrations}.test.ts", // PostgreSQL
  "server/src/bus/redisBus.test.ts", // Redis
  "server/src/build/buildPackage.test.ts", // lists tools through Node 24
  "server/src/cli/tool-init.test.ts", // runs the written packages on Node 24
  "server/src/demo/widgetBuild.test.ts", // Vite build
  "server/src/demo/demoPackages.test.ts", // builds the demo's packages through Node 24
  "sdk/src/host.test.ts", // Node 24
  "sdk/src/stdio.test.ts", // Node 24
];

export default defineConfig({
  test: {
    include: ["{shared,sdk,server,adapters,widget,examples}/**/*.test.{ts,tsx}"],
    exclude: ["**/node_modules/**", "**/dist/**", "runtime/**", ...NEEDS_SERVICES],
    testTimeout: 30_000,
    pool: "forks",
    // One file per core, as in vite.config.ts (Vitest's default leaves one core idle).
    maxWorkers: Math.max(2, availableParallelism()),
    reporters: ["default", "./scripts/summaryReporter.ts"],
  },
});
