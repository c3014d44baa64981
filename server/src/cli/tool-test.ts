// `caplo tool test DIR`: builds the package, runs each fixture of its `tests` glob through the runner
// and sandbox (write fixtures for real, against what the package points at), prints pass/fail per
// fixture with the reasons and the invocation's log lines, and exits non-zero on any failure.
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { buildSettings, runnerSettings } from "../app/runnerSettings.ts";
import { buildPackage } from "../build/index.ts";
import { readConfig } from "../config/index.ts";
import { CaploToolRunner, JsonlLogStore } from "../runner/index.ts";
import { loadFixtures, runFixture } from "../runner/fixtures.ts";
import { insidePackage } from "../runner/packagePath.ts";
import { terminalText } from "../eval/report.ts";

export const help = `Usage: caplo tool test DIR [--secrets FILE] [--filter TEXT] [--hosted]

Runs the package's fixtures (caplo.yaml \`tests\`, default tests/*.json) through the sandboxed runner:
calls, and status checks of writes (fixtures with "status"). Write fixtures run for real: point the
package at a test environment (see docs/tool-fixtures.md).

  --secrets FILE  dotenv file with secret values (default DIR/.caplo/secrets.env, refused if it
                  is a link leaving the package); the environment wins over the file (not with
                  --hosted). Fixtures name declared secrets, never hold values; each run says
                  which environment variables it read.
  --filter TEXT   run only fixtures whose label contains TEXT
  --hosted        run as Caplo runs fixtures: fixtures of write tools are skipped and never run
                  ("write tool: fixture runs on Caplo skip writes"); skipped is not failed

Logs of every invocation are kept in DIR/.caplo/invocations.jsonl: \`caplo tool logs --dir DIR\`.
Where Linux namespaces are unavailable, CAPLO_SANDBOX=weak runs the package (build and fixtures) in a
weaker sandbox: this command only; caplo serve refuses it.
Exit status: 0 all passed, 1 a fixture failed, 2 the package did not build or bad usage.`;

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
}

export async function run(args: string[]): Promise<number> {
  const positional = args.filter((arg, index) => !arg.startsWith("--") && !["--secrets", "--filter"].includes(args[index - 1] ?? ""));
  const unknown = args.find((arg) => arg.startsWith("--") && !["--secrets", "--filter", "--hosted"].includes(arg));
  if (unknown) {
    console.error(`option_unknown: unknown option ${unknown}`);
    console.error(help);
    return 2;
  }
  const hosted = args.includes("--hosted");
  if (positional.length !== 1) {
    console.error(help);
    return 2;
  }
  const read = readConfig(process.env);
  for (const warning of read.warnings) console.error(`warn: ${warning.message}`);
  if (!read.ok) {
    for (const error of read.errors) console.error(`${error.code} at ${error.path}: ${error.message}`);
    return 2;
  }
  const dir = resolve(positional[0]!);
  const givenSecrets = option(args, "--secrets");
  const secretsFile = givenSecrets ?? join(dir, ".caplo", "secrets.env");
  const filter = option(args, "--filter");
  // The package's own secrets file is read only if it is the package's: not a link to a file of the host.
  if (givenSecrets === undefined) {
    const inside = insidePackage(dir, secretsFile);
    const linked = inside.ok && existsSync(inside.path) && statSync(inside.path).nlink > 1;
    if (!inside.ok || linked) {
      console.error(`✗ path_outside_package .caplo/secrets.env: ${inside.ok ? "it is a hard link to a file elsewhere: refused" : inside.error.message}`);
      return 2;
    }
  }
  const allowWeakSandbox = read.config.CAPLO_SANDBOX === "weak";

  const built = await buildPackage(dir, { allowWeakSandbox, ...buildSettings(read.config) });
  if (!built.ok) {
    console.error(`✗ ${dir} did not build:`);
    for (const error of built.errors) console.error(`  ${error.code} ${error.path}: ${error.message}`);
    return 2;
  }
  const version = built.version;
  const fixtures = (await loadFixtures(dir, version.manifest.tests)).filter((entry) => !filter || entry.label.includes(filter));
  const logStore = new JsonlLogStore(join(dir, ".caplo", "invocations.jsonl"), { root: dir, onError: (error) => console.error(`  invocation log not written: ${error.message}`) });
  const outside = logStore.outsideRoot();
  if (outside) {
    console.error(`✗ ${outside.code} ${outside.path}: ${outside.message}`);
    return 2;
  }
  const runner = new CaploToolRunner({ ...runnerSettings(read.config), logStore });
  console.log(`${version.id} (${version.tools.length} tool${version.tools.length === 1 ? "" : "s"}; ${runner.sandboxNote})`);
  if (fixtures.length === 0) {
    console.log(`No fixtures match ${version.manifest.tests}.`);
    console.log("0 passed, 0 failed");
    await runner.close();
    return 1;
  }
  const counts = { passed: 0, failed: 0, skipped: 0 };
  try {
    await runner.load(version);
    for (const entry of fixtures) {
      const run = await runFixture(runner, version, entry, { mode: hosted ? "hosted" : "local", env: process.env, secretsFile, logStore });
      counts[run.state] += 1;
      if (run.state === "skipped") {
        console.log(`  - ${entry.label}${run.detail} skipped: ${terminalText(run.problems.join("; "))}`);
        continue;
      }
      console.log(`  ${run.state === "passed" ? "✓" : "✗"} ${entry.label}${run.detail}`);
      if (run.secretsRead.length) console.log(`      secrets: ${run.secretsRead.join("; ")}`);
      // Problems quote the package's answer and its log lines are its own: no control characters reach the terminal.
      for (const problem of run.problems) console.log(`      ${terminalText(problem)}`);
      for (const line of run.logs) console.log(`      log: ${terminalText(line)}`);
    }
  } catch (error) {
    console.error(`✗ the package could not be run: ${(error as Error).message}`);
    await runner.close();
    return 2;
  }
  await runner.close();
  console.log(`${counts.passed} passed, ${counts.failed} failed${hosted ? `, ${counts.skipped} skipped` : ""}`);
  return counts.failed === 0 ? 0 : 1;
}
