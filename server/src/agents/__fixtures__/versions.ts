// Built package versions as `caplo tool build` records them, for release tests that do not need to
// build real packages (tests/agents builds real ones). Each differs in content hash by `revision`.
import { createHash } from "node:crypto";
import { modelToolName, packageVersionSchema, type PackageVersion, type ToolPolicy } from "@caplo/shared";

type PolicyFields = ToolPolicy extends infer P ? (P extends unknown ? Omit<P, "name"> : never) : never;
type ToolSpec = { name: string; policy: PolicyFields; hasStatus?: boolean };

export function builtVersion(name: string, tools: ToolSpec[], revision = 1): PackageVersion {
  const contentHash = createHash("sha256").update(`${name}#${revision}`).digest("hex");
  return packageVersionSchema.parse({
    id: `${name}@sha256:${contentHash}`,
    name,
    type: "mcp",
    contentHash,
    dir: `/var/caplo/packages/${name}/${contentHash}`,
    manifest: {
      apiVersion: "v1",
      kind: "ToolPackage",
      name,
      type: "mcp",
      entry: "src/server.ts",
      runtime: "node24",
      tools: tools.map((tool) => ({ name: tool.name, ...tool.policy })),
    },
    effectOutcomes: true,
    tools: tools.map((tool) => ({
      name: tool.name,
      modelName: modelToolName(name, tool.name),
      description: `${tool.name} (revision ${revision})`,
      inputSchema: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"], additionalProperties: false },
      policy: { name: tool.name, ...tool.policy },
      hasStatus: tool.hasStatus ?? false,
    })),
    builtAt: new Date(Date.UTC(2026, 0, revision)).toISOString(),
  });
}

export const ordersV1 = builtVersion("orders", [
  { name: "get_order", policy: { effect: "read", timeoutSeconds: 5 } },
  { name: "cancel_order", policy: { effect: "write", timeoutSeconds: 15, confirmation: "required" }, hasStatus: true },
]);
export const ordersV2 = builtVersion(
  "orders",
  [
    { name: "get_order", policy: { effect: "read", timeoutSeconds: 8 } },
    { name: "cancel_order", policy: { effect: "write", timeoutSeconds: 15, confirmation: "required" }, hasStatus: true },
  ],
  2,
);
export const accountV1 = builtVersion("account", [
  { name: "get_profile", policy: { effect: "read", timeoutSeconds: 5, subject: { policy: "verified_required", selector: "customerId" } } },
]);
