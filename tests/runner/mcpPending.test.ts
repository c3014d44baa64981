// The seed's own MCP `pending` example in a tool with an outputSchema: `{ content, _meta: { pending } }`
// carries no structuredContent, which the MCP SDK's McpServer refuses for such a tool ("has an output
// schema but no structured content"), so the write became unknown. Caplo's host lets a pending result
// through (sdk/src/pendingResult.ts); an applied result is still checked against the schema. A real MCP
// package, built and run by the real sandboxed runner.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPackage } from "../../server/src/build/index.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";

const root = mkdtempSync(join(tmpdir(), "caplo-mcp-pending-"));
const SERVER = `import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY } from "@caplo/tools";
import { z } from "zod";
export function createServer() {
  const server = new McpServer({ name: "orders", version: "1.0.0" }, { capabilities: { logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } });
  server.registerTool(
    "cancel_order",
    { description: "Cancel an order.", inputSchema: { orderId: z.string(), mode: z.enum(["pending", "applied", "wrong"]) }, outputSchema: { orderId: z.string(), status: z.string() } },
    async ({ orderId, mode }) => {
      if (mode === "pending") {
        // Pending, exactly as the seed writes it:
        return { content: [{ type: "text", text: "The cancellation is being processed." }], _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef: "op_123" } } };
      }
      const result = mode === "applied" ? { orderId, status: "cancelled" } : { orderId, status: 42 };
      return { content: [{ type: "text", text: JSON.stringify(result) }], structuredContent: result, _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } } };
    },
  );
  return server;
}
`;
const runner = new CaploToolRunner({ maxProcesses: 2 });
let versionId = "";
beforeAll(async () => {
  const dir = join(root, "orders");
  mkdirSync(join(dir, "src"), { recursive: true });
  writeFileSync(join(dir, "caplo.yaml"), "apiVersion: v1\nkind: ToolPackage\nname: orders\ntype: mcp\nentry: src/server.ts\nruntime: node24\ntools:\n  - name: cancel_order\n    effect: write\n    timeoutSeconds: 10\n");
  writeFileSync(join(dir, "src", "server.ts"), SERVER);
  const built = await buildPackage(dir);
  if (!built.ok) throw new Error(JSON.stringify(built.errors));
  expect(built.warnings).toEqual([]);
  await runner.load(built.version);
  versionId = built.version.id;
}, 120_000);
afterAll(async () => {
  await runner.close();
  rmSync(root, { recursive: true, force: true });
});

const call = (mode: string, key: string) =>
  runner.call({ packageVersionId: versionId, tool: "cancel_order", args: { orderId: "SO-1002", mode }, context: { invocationId: `inv-${key}`, idempotencyKey: key, secrets: {} } });

describe("the seed's MCP pending example in a tool with an outputSchema", () => {
  it("is pending with its operationRef, not unknown", async () => {
    const result = await call("pending", "k-pending");
    expect(result.outcome).toEqual({ outcome: "pending", operationRef: "op_123", message: "The cancellation is being processed." });
    expect(result.isError).toBe(false);
  });

  it("an applied result is still checked against the outputSchema", async () => {
    expect((await call("applied", "k-applied")).outcome).toMatchObject({ outcome: "applied", structuredContent: { orderId: "SO-1002", status: "cancelled" } });
    expect((await call("wrong", "k-wrong")).outcome).toMatchObject({ outcome: "unknown" });
  });
});
