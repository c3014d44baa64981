// The time a visitor takes to answer a tool's question does not count against the tool's timeoutSeconds:
// a real function package (timeoutSeconds: 1) asks through ctx.elicit() and the visitor answers after
// 1.5 s; the call succeeds, its signal has not fired and its deadline moved by the wait. Its running
// time still counts: a handler that hangs after the answer times out. Real build, real sandboxed runner.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPackage } from "../../server/src/build/index.ts";
import type { ElicitResponse } from "../../server/src/runner/api.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-elicit-wait-"));
const TOOL = `import { defineTool } from "@caplo/tools";
export default defineTool({
  name: "pick",
  description: "Asks which size, then maybe hangs.",
  inputSchema: { type: "object", properties: { hang: { type: "boolean" } }, required: ["hang"] },
  async handler({ hang }, ctx) {
    const before = ctx.deadline.getTime();
    const answer = await ctx.elicit({ message: "Which size?", requestedSchema: { type: "object", properties: { size: { type: "string" } }, required: ["size"] } });
    if (hang) await new Promise(() => setInterval(() => {}, 1000));
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { size: answer.content?.size ?? "none", aborted: ctx.signal.aborted, movedMs: ctx.deadline.getTime() - before };
  },
});
`;
const runner = new CaploToolRunner({ maxProcesses: 2 });
let versionId = "";
beforeAll(async () => {
  const dir = join(root, "sizes");
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "caplo.yaml"), "apiVersion: v1\nkind: ToolPackage\nname: sizes\ntype: function\nentry: src/tool.ts\nruntime: node24\neffect: read\ntimeoutSeconds: 1\nelicitation:\n  fields:\n    - name: size\n");
  writeFileSync(join(dir, "src", "tool.ts"), TOOL);
  const built = await buildPackage(dir);
  if (!built.ok) throw new Error(JSON.stringify(built.errors));
  await runner.load(built.version);
  versionId = built.version.id;
}, 120_000);
afterAll(async () => {
  await runner.close();
  rmSync(root, { recursive: true, force: true });
});

const slowAnswer = (ms: number) => () => new Promise<ElicitResponse>((resolve) => setTimeout(() => resolve({ action: "accept", content: { size: "M" } }), ms));
const call = (hang: boolean, elicit: () => Promise<ElicitResponse>) =>
  runner.call({ packageVersionId: versionId, tool: "pick", args: { hang }, context: { invocationId: `inv-${hang}-${Math.random()}`, secrets: {} }, elicit });

describe("waiting for the visitor's answer", () => {
  it("does not count against timeoutSeconds: a 1.5 s answer to a 1 s tool succeeds, its signal unfired and its deadline moved", async () => {
    const result = await call(false, slowAnswer(1500));
    expect(result.isError, result.modelText).toBe(false);
    const value = result.structuredContent as { size: string; aborted: boolean; movedMs: number };
    expect(value.size).toBe("M");
    expect(value.aborted).toBe(false);
    expect(value.movedMs).toBeGreaterThanOrEqual(1300);
  });

  it("the tool's own running time still counts: hanging after the answer times out", async () => {
    const result = await call(true, slowAnswer(1200));
    expect(result).toMatchObject({ isError: true, modelText: "The tool timed out after 1 seconds." });
    expect(result.durationMs).toBeGreaterThanOrEqual(2000);
  });
});
