// Which tests beside the code `npm run test:unit` leaves to `npm test`: a test that reaches the test
// services (tests/support/services.ts: PostgreSQL, Redis, Chromium), by itself or through a helper it
// imports, found by following its relative imports; and the few that start Node 24, a Vite build or other
// processes, which no import shows (RUNS_PROCESSES). So a new store or bus test leaves the fast loop without anyone
// remembering to list it.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** Tests that start sandboxed Node 24 packages, Vite builds or other Node processes. */
export const RUNS_PROCESSES = [
  "server/src/build/buildPackage.test.ts", // lists tools through Node 24
  "server/src/cli/tool-init.test.ts", // runs the written packages on Node 24
  "server/src/demo/widgetBuild.test.ts", // Vite build
  "server/src/demo/demoPackages.test.ts", // builds the demo's packages through Node 24
  "sdk/src/host.test.ts", // Node 24
  "sdk/src/stdio.test.ts", // Node 24
  "server/src/channels/inbox/sqliteInboxStore.test.ts", // two Node processes (through tsx) racing on one file
];

/** Where the tests beside the code live. */
export const UNIT_FOLDERS = ["shared", "sdk", "server", "adapters", "widget", "examples"];
/** Never test files. */
export const NEVER = ["**/node_modules/**", "**/dist/**", "runtime/**"];

const SERVICES = "tests/support/services.ts";
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)"(\.{1,2}\/[^"]+)"/g;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules" || entry.name === "dist") return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? testFiles(path) : /\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/** The unit test files (relative to root, under `folders`) that reach tests/support/services.ts. */
export function reachingServices(root: string, folders: string[]): string[] {
  const services = resolve(root, SERVICES);
  const reaches = new Map<string, boolean>();
  const visit = (file: string): boolean => {
    const known = reaches.get(file);
    if (known !== undefined) return known;
    reaches.set(file, false); // an import cycle adds nothing
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      return false;
    }
    for (const [, specifier] of text.matchAll(IMPORT)) {
      const target = resolve(dirname(file), specifier!);
      if (target === services || (existsSync(target) && visit(target))) {
        reaches.set(file, true);
        return true;
      }
    }
    return false;
  };
  return folders
    .filter((folder) => existsSync(join(root, folder)))
    .flatMap((folder) => testFiles(join(root, folder)))
    .filter(visit)
    .map((file) => relative(root, file))
    .sort();
}

/** The tests beside the code that the fast loop leaves to `npm test` (relative to root). */
export function leftOutOfUnit(root: string): string[] {
  return [...RUNS_PROCESSES, ...reachingServices(root, UNIT_FOLDERS)];
}

/**
 * The fast loop's Vitest options, for `npm run test:unit` and the unit project of `npm test`. Each worker
 * imports a module once for all the files it runs, not once per file (isolate: false): importing was most
 * of this loop's time (vitest's import time 252 s against 111 s of tests, summed over the workers). These
 * tests share no state but the DOM, which tests/support/unitSetup.ts cleans after each test.
 */
export function unitTests(root: string) {
  return {
    include: [`{${UNIT_FOLDERS.join(",")}}/**/*.test.{ts,tsx}`],
    exclude: [...NEVER, ...leftOutOfUnit(root)],
    isolate: false,
    setupFiles: ["tests/support/unitSetup.ts"],
  };
}
