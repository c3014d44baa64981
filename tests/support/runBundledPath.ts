// Where runBundled.mjs is: `spawn(process.execPath, [RUN_BUNDLED, entry.ts, ...args])` runs a test server's
// TypeScript entry from a bundle instead of through tsx's loader hooks.
import { join } from "node:path";

export const RUN_BUNDLED = join(import.meta.dirname, "runBundled.mjs");
