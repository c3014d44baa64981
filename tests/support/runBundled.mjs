// `node tests/support/runBundled.mjs ENTRY.ts ARGS...`: runs a TypeScript entry of the tests (a server in a
// process of its own) from a bundle of it and what it imports (bin/cliBundle.mjs, as `caplo` runs), built
// on first use and again when a source changes; through tsx where it cannot be built. Loading the server's
// modules through tsx's loader hooks cost about 1.3 s of CPU more a start. The entry sees its own
// arguments where it would under `node --import tsx ENTRY.ts ARGS...` (process.argv[2] is the first).
import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { bundledModule } from "../../bin/cliBundle.mjs";

const entry = resolve(process.argv[2] ?? "");
process.argv.splice(1, 1);
const cache = join(import.meta.dirname, "..", "..", "node_modules", ".cache", "caplo-cli", "entries", createHash("sha256").update(entry).digest("hex").slice(0, 16));
const bundle = await bundledModule(entry, cache);
if (bundle) await import(bundle);
else {
  const { register } = await import("tsx/esm/api");
  register();
  await import(pathToFileURL(entry).href);
}
