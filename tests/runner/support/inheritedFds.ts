// Run by sandboxFds.test.ts under bash with descriptors 200-202 left open (as an operator's shell or a
// supervisor might): starts the runner, calls the escape package's inherited_fds attack once in the
// sandbox, and prints the report as JSON.
import { CaploToolRunner } from "../../../server/src/runner/toolRunner.ts";
import { TEST_HOST, testVersion } from "../testPackages.ts";

const version = testVersion("escape", [{ name: "attempt", policy: { effect: "read", timeoutSeconds: 15 } }], { egress: [] });
const runner = new CaploToolRunner({ hostModule: TEST_HOST });
try {
  await runner.load(version);
  const result = await runner.call({ packageVersionId: version.id, tool: "attempt", args: { kind: "inherited_fds", fds: [200, 201, 202] }, context: { invocationId: "inv-fds", secrets: {} } });
  process.stdout.write(JSON.stringify({ mode: runner.sandboxMode, report: result.structuredContent ?? result.modelText }));
} finally {
  await runner.close();
}
