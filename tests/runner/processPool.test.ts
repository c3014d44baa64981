// Warm processes are capped: in number (the least recently used idle process is stopped) and in
// memory (a package that exceeds its heap cap dies, its call fails, and the next call restarts it).
import { afterAll, describe, expect, it } from "vitest";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { TEST_HOST, testVersion } from "./testPackages.ts";

const plain = testVersion("plain", [{ name: "write", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" } }]);
const other = testVersion("other", [{ name: "noop", policy: { effect: "read", timeoutSeconds: 5 } }]);
const outcomes = testVersion("outcomes", [
  { name: "hog", policy: { effect: "read", timeoutSeconds: 20 } },
  { name: "echo", policy: { effect: "read", timeoutSeconds: 5 } },
]);
const runner = new CaploToolRunner({ hostModule: TEST_HOST, maxProcesses: 1, memoryMb: 96 });
afterAll(() => runner.close());

describe("process pool", () => {
  it("keeps at most maxProcesses warm, stopping the least recently used", async () => {
    await runner.load(plain);
    expect(await runner.processOf(plain.id)).toBeDefined();
    await runner.load(other);
    expect(await runner.processOf(plain.id)).toBeUndefined();
    const result = await runner.call({ packageVersionId: plain.id, tool: "write", args: { mode: "ok" }, context: { invocationId: "p1", secrets: {}, idempotencyKey: "k" } });
    expect(result.outcome).toMatchObject({ outcome: "applied" });
    expect(runner.starts(plain.id)).toBe(2);
    expect(await runner.processOf(other.id)).toBeUndefined();
  }, 120_000);

  it("a package over its memory cap dies, the call fails, and the next call gets a fresh process", async () => {
    await runner.load(outcomes);
    const hog = await runner.call({ packageVersionId: outcomes.id, tool: "hog", args: {}, context: { invocationId: "h1", secrets: {} } });
    expect(hog.isError).toBe(true);
    expect(hog.modelText).toContain("The tool failed");
    const echo = await runner.call({ packageVersionId: outcomes.id, tool: "echo", args: {}, context: { invocationId: "h2", secrets: {} } });
    expect(echo.isError).toBe(false);
    expect(runner.starts(outcomes.id)).toBe(2);
  }, 120_000);
});
