// `npm test`: the type check (tsc --noEmit) and every test (vitest run), at once. The type check is one
// process on one core for 10-30 s; vitest spends its first seconds in its global setup (PostgreSQL, Redis
// and Chromium found or started), so the check fits in beside it instead of before it. The check's output is
// printed when it ends, not mixed into the tests'; the run fails if either fails. Arguments go to vitest.
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = (name) => join(ROOT, "node_modules", ".bin", name);

function run(command, args, stdio) {
  const child = spawn(command, args, { cwd: ROOT, stdio });
  let output = "";
  if (stdio === "pipe") {
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
  }
  return new Promise((done) => {
    child.once("error", (error) => done({ code: 1, output: `${output}${error.message}\n` }));
    child.once("exit", (code, signal) => done({ code: code ?? (signal ? 1 : 0), output }));
  });
}

// Ctrl-C reaches both children through the terminal's process group; this process waits for them.
process.on("SIGINT", () => undefined);
const typecheck = run(bin("tsc"), ["--noEmit", "-p", "tsconfig.json"], "pipe");
const tests = run(bin("vitest"), ["run", ...process.argv.slice(2)], "inherit");
const [checked, tested] = await Promise.all([typecheck, tests]);
process.stdout.write(`\n== type check (tsc --noEmit): ${checked.code === 0 ? "passed" : "FAILED"}\n${checked.output}`);
process.exitCode = checked.code !== 0 || tested.code !== 0 ? 1 : 0;
