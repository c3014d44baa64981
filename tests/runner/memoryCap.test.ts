// The whole package process is capped in memory where cgroups work here (v2 memory.max, or v1
// memory.limit_in_bytes on hybrid hosts), not only its V8 heap: a package that allocates Buffers
// (off-heap) beyond the cap is killed, its read fails and its write is unknown, other packages carry
// on, and the next call gets a fresh process. Where cgroups are unavailable the runner says the heap
// cap is all that applies.
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cgroupSupport } from "../../server/src/runner/cgroup.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { TEST_HOST, testVersion } from "./testPackages.ts";

const memory = testVersion("memory", [
  { name: "buffers", policy: { effect: "read", timeoutSeconds: 60 } },
  { name: "write_buffers", policy: { effect: "write", timeoutSeconds: 60, confirmation: "required" } },
  { name: "echo", policy: { effect: "read", timeoutSeconds: 10 } },
]);
const other = testVersion("other", [{ name: "noop", policy: { effect: "read", timeoutSeconds: 10 } }]);
const support = cgroupSupport();
let runner: CaploToolRunner;

beforeAll(async () => {
  // Heap 64 MiB, whole process 64 + 128 MiB.
  runner = new CaploToolRunner({ hostModule: TEST_HOST, memoryMb: 64 });
  await runner.load(memory);
  await runner.load(other);
}, 120_000);
afterAll(() => runner?.close());

describe("memory cap", () => {
  it("the runner says which limit applies", () => {
    if (support.available) expect(runner.memoryNote).toMatch(new RegExp(`^memory: cgroup ${support.version} limit 192 MiB per package process`));
    else expect(runner.memoryNote).toContain(`memory: V8 heap cap only (64 MiB; Buffers and other off-heap memory are not capped): cgroups unavailable: ${support.reason}`);
    const off = new CaploToolRunner({ hostModule: TEST_HOST, cgroups: false });
    expect(off.memoryNote).toContain("V8 heap cap only (256 MiB");
    expect(off.memoryNote).toContain("turned off");
  });

  it.runIf(support.available)("kills a package allocating Buffers beyond its cap; the call fails, a write is unknown, others carry on", async () => {
    const call = (tool: string, invocationId: string, version = memory) =>
      runner.call({ packageVersionId: version.id, tool, args: {}, context: { invocationId, secrets: {}, ...(tool === "write_buffers" && { idempotencyKey: invocationId }) } });
    const [hog, bystander] = await Promise.all([call("buffers", "m1"), call("noop", "o1", other)]);
    expect(hog.isError).toBe(true);
    expect(hog.modelText).toContain("its process was killed for going over its memory limit (192 MiB)");
    expect(bystander.isError, bystander.modelText).toBe(false);

    const write = await call("write_buffers", "m2");
    expect(write.outcome).toMatchObject({ outcome: "unknown" });
    expect(runner.starts(memory.id)).toBe(2);

    const after = await call("echo", "m3");
    expect(after.isError, after.modelText).toBe(false);
    expect(after.modelText).toBe("still here");
    expect(runner.starts(memory.id)).toBe(3);
    expect(runner.starts(other.id)).toBe(1);
  }, 180_000);

  it.runIf(support.available)("removes a sandbox's group when its process is gone", async () => {
    const process = await runner.processOf(other.id);
    expect(process).toBeDefined();
    const dir = support.available ? support.memory : "";
    const before = (await import("node:fs")).readdirSync(dir).filter((name) => name.startsWith("sandbox-"));
    expect(before.length).toBeGreaterThan(0);
    await runner.unload(other.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = (await import("node:fs")).readdirSync(dir).filter((name) => name.startsWith("sandbox-"));
    expect(after.length).toBe(before.length - 1);
    expect(existsSync(dir)).toBe(true);
  }, 60_000);
});
