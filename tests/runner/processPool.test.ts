// Warm processes are capped: in number (the least recently used idle process is stopped) and in
// memory (a package that exceeds its heap cap dies, its call fails, and the next call restarts it).
import { afterAll, describe, expect, it } from "vitest";
import { CaploToolRunner, processKey } from "../../server/src/runner/toolRunner.ts";
import type { ToolCallResult } from "../../server/src/runner/api.ts";
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

describe("process pool at its cap with every process busy", () => {
  // One place; a call in another version waits for it (at most its own timeout), never a second process.
  const busy = new CaploToolRunner({ hostModule: TEST_HOST, maxProcesses: 1 });
  const slow = testVersion("outcomes", [{ name: "slow", policy: { effect: "read", timeoutSeconds: 2 } }]);
  const quick = testVersion("plain", [{ name: "write", policy: { effect: "write", timeoutSeconds: 1, confirmation: "required" } }]);
  const patient = testVersion("plain", [{ name: "write", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" } }]);
  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, busy.processCount)), 2);
  afterAll(async () => {
    clearInterval(sampler);
    await busy.close();
  });

  /** Starts the slow call and resolves (with its result to come) once it runs in its process. */
  async function startSlow(order: string[], id: string): Promise<{ done: Promise<ToolCallResult> }> {
    const done = busy.call({ packageVersionId: slow.id, tool: "slow", args: {}, context: { invocationId: id, secrets: {} } }).then((result) => {
      order.push("slow");
      return result;
    });
    for (;;) {
      const process = await busy.processOf(slow.id);
      if (process?.routes.has(id)) return { done };
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  it("a call that gets no place within its timeout is refused (not applied); one that may wait runs once a process is idle", async () => {
    for (const version of [quick, patient, slow]) await busy.load(version);
    const order: string[] = [];
    const { done: slowDone } = await startSlow(order, "busy-1");
    const call = (version: typeof quick, id: string) =>
      busy.call({ packageVersionId: version.id, tool: "write", args: { mode: "ok" }, context: { invocationId: id, secrets: {}, idempotencyKey: `k-${id}` } }).then((result) => {
        order.push(id);
        return result;
      });
    // quick may wait 1 s (its timeout), patient 5 s; the slow call holds the one place for 2 s.
    const [refused, waited, slowResult] = await Promise.all([call(quick, "quick"), call(patient, "patient"), slowDone]);
    expect(refused.isError).toBe(true);
    expect(refused.modelText).toContain("all 1 package processes are busy");
    expect(refused.outcome).toMatchObject({ outcome: "not_applied" });
    expect(slowResult.modelText).toContain("timed out");
    expect(waited.outcome).toMatchObject({ outcome: "applied" });
    expect(order).toEqual(["quick", "slow", "patient"]);
    expect(await busy.processOf(slow.id)).toBeUndefined();
    expect(busy.starts(quick.id)).toBe(1); // started by load only: the refused call started nothing
    expect(most).toBe(1);
  }, 60_000);
});

describe("process pool across workspaces", () => {
  // Two workspaces that pin the same version never share its process: a package that keeps a call's
  // secret in memory cannot hand it to the other workspace's call.
  const pools = new CaploToolRunner({ hostModule: TEST_HOST, maxProcesses: 4 });
  afterAll(() => pools.close());

  it("one warm process per version and workspace; the default workspace keeps the bare id; close stops them all", async () => {
    await pools.load(other);
    const call = (workspaceId: string | undefined, id: string) =>
      pools.call({ packageVersionId: other.id, tool: "noop", args: {}, context: { invocationId: id, secrets: {}, ...(workspaceId !== undefined && { workspaceId }) } });
    for (const [workspace, id] of [["acme", "w1"], ["zeta", "w2"], ["acme", "w3"], ["default", "w4"], [undefined, "w5"]] as const) {
      expect((await call(workspace, id)).isError).toBe(false);
    }
    expect(processKey(other.id, "default")).toBe(other.id);
    expect(pools.starts(other.id)).toBe(1); // load, then the default workspace's calls, on one process
    expect(pools.starts(processKey(other.id, "acme"))).toBe(1);
    expect(pools.starts(processKey(other.id, "zeta"))).toBe(1);
    const acme = await pools.processOf(processKey(other.id, "acme"));
    const zeta = await pools.processOf(processKey(other.id, "zeta"));
    const plainDefault = await pools.processOf(other.id);
    expect(acme).toBeDefined();
    expect(new Set([acme, zeta, plainDefault]).size).toBe(3);
    expect(pools.processCount).toBe(3);
    await pools.close();
    expect(pools.processCount).toBe(0);
  }, 120_000);
});
