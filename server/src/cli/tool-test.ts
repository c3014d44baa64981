// `caplo tool test DIR`: builds the package, runs each fixture of its `tests` glob through the runner
// and sandbox (write fixtures for real, against what the package points at), prints pass/fail per
// fixture with the reasons and the invocation's log lines, and exits non-zero on any failure.
import { randomUUID } from "node:crypto";
import { join, resolve } from "node:path";
import { buildPackage } from "../build/index.ts";
import { CaploToolRunner, JsonlLogStore } from "../runner/index.ts";
import { checkExpectations, checkStatusExpectations, loadFixtures, secretValues } from "../runner/fixtures.ts";

export const help = `Usage: caplo tool test DIR [--secrets FILE] [--filter TEXT]

Runs the package's fixtures (caplo.yaml \`tests\`, default tests/*.json) through the sandboxed runner:
calls, and status checks of writes (fixtures with "status"). Write fixtures run for real: point the
package at a test environment (see docs/tool-fixtures.md).

  --secrets FILE  dotenv file with secret values (default DIR/.caplo/secrets.env); the
                  environment wins over the file. Fixtures name secrets, never hold values.
  --filter TEXT   run only fixtures whose label contains TEXT

Logs of every invocation are kept in DIR/.caplo/invocations.jsonl: \`caplo tool logs --dir DIR\`.
Exit status: 0 all passed, 1 a fixture failed, 2 the package did not build or bad usage.`;

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
}

export async function run(args: string[]): Promise<number> {
  const positional = args.filter((arg, index) => !arg.startsWith("--") && !["--secrets", "--filter"].includes(args[index - 1] ?? ""));
  if (positional.length !== 1) {
    console.error(help);
    return 2;
  }
  const dir = resolve(positional[0]!);
  const secretsFile = option(args, "--secrets") ?? join(dir, ".caplo", "secrets.env");
  const filter = option(args, "--filter");

  const built = await buildPackage(dir);
  if (!built.ok) {
    console.error(`✗ ${dir} did not build:`);
    for (const error of built.errors) console.error(`  ${error.code} ${error.path}: ${error.message}`);
    return 2;
  }
  const version = built.version;
  const fixtures = (await loadFixtures(dir, version.manifest.tests)).filter((entry) => !filter || entry.label.includes(filter));
  const logStore = new JsonlLogStore(join(dir, ".caplo", "invocations.jsonl"));
  const runner = new CaploToolRunner({ logStore });
  console.log(`${version.id} (${version.tools.length} tool${version.tools.length === 1 ? "" : "s"}; ${runner.sandboxNote})`);
  if (fixtures.length === 0) {
    console.log(`No fixtures match ${version.manifest.tests}.`);
    console.log("0 passed, 0 failed");
    await runner.close();
    return 1;
  }
  let passed = 0;
  let failed = 0;
  try {
    await runner.load(version);
    for (const entry of fixtures) {
      const problems: string[] = [];
      let detail = "";
      let logs: string[] = [];
      if (entry.error) problems.push(`${entry.error.code} ${entry.error.path}: ${entry.error.message}`);
      const fixture = entry.fixture;
      if (fixture) {
        const toolName = fixture.tool ?? (version.type === "function" || version.tools.length === 1 ? version.tools[0]!.name : undefined);
        const tool = version.tools.find((candidate) => candidate.name === toolName);
        const secrets = secretValues(fixture.secrets, process.env, secretsFile);
        if (!toolName) problems.push("fixture_tool_missing: this package has several tools; name one with \"tool\"");
        else if (!tool) problems.push(`fixture_tool_unknown: the package has no tool '${toolName}' (it has ${version.tools.map((t) => t.name).join(", ")})`);
        for (const name of secrets.missing) problems.push(`secret_missing: ${name} has no value: set it in the environment or in ${secretsFile}`);
        if (tool && fixture.status) {
          if (tool.policy.effect !== "write") problems.push(`fixture_status_unavailable: ${tool.name} is a read tool; status checks are for writes`);
          else if (!tool.hasStatus) problems.push(`fixture_status_unavailable: ${tool.name} has no status check (a function package defines status(); an MCP server advertises caplo/status)`);
        }
        if (tool && fixture.status && problems.length === 0) {
          const invocationId = `fixture-${randomUUID()}`;
          const started = performance.now();
          const outcome = await runner.checkStatus({
            packageVersionId: version.id,
            tool: tool.name,
            ...(fixture.status.operationRef !== undefined && { operationRef: fixture.status.operationRef }),
            context: { ...fixture.context, invocationId, secrets: secrets.values },
          });
          const lines = runner.logStore.read(invocationId).flatMap((record) => record.logs);
          problems.push(...checkStatusExpectations(fixture.expect, outcome, lines));
          detail = ` (${tool.name}, status → ${outcome.outcome}, ${Math.round(performance.now() - started)} ms, ${invocationId})`;
          logs = lines.map((line) => `${line.level.padEnd(5)} ${line.message}${line.data !== undefined ? ` ${JSON.stringify(line.data)}` : ""}`);
        } else if (tool && problems.length === 0) {
          const invocationId = `fixture-${randomUUID()}`;
          const idempotencyKey = tool.policy.effect === "write" ? (fixture.context.idempotencyKey ?? `fixture-${randomUUID()}`) : undefined;
          const result = await runner.call({
            packageVersionId: version.id,
            tool: tool.name,
            args: fixture.input ?? {},
            context: { ...fixture.context, invocationId, secrets: secrets.values, ...(idempotencyKey && { idempotencyKey }) },
          });
          problems.push(...checkExpectations(fixture.expect, result));
          detail = ` (${tool.name}, ${tool.policy.effect}${result.outcome ? ` → ${result.outcome.outcome}` : ""}, ${result.durationMs} ms, ${invocationId})`;
          logs = result.logs.map((line) => `${line.level.padEnd(5)} ${line.message}${line.data !== undefined ? ` ${JSON.stringify(line.data)}` : ""}`);
        }
      }
      if (problems.length === 0) {
        passed += 1;
        console.log(`  ✓ ${entry.label}${detail}`);
      } else {
        failed += 1;
        console.log(`  ✗ ${entry.label}${detail}`);
        for (const problem of problems) console.log(`      ${problem}`);
      }
      for (const line of logs) console.log(`      log: ${line}`);
    }
  } catch (error) {
    console.error(`✗ the package could not be run: ${(error as Error).message}`);
    await runner.close();
    return 2;
  }
  await runner.close();
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}
