import { describe, expect, it } from "vitest";
import { manifestSchema, modelToolName, toolPolicies } from "./manifest.ts";

const base = { apiVersion: "v1", kind: "ToolPackage", name: "orders", entry: "src/tool.ts", runtime: "node24" };

describe("caplo.yaml schema", () => {
  it("defaults a write's confirmation to required and tests to tests/*.json", () => {
    const parsed = manifestSchema.parse({ ...base, type: "function", effect: "write", timeoutSeconds: 15 });
    expect(parsed).toMatchObject({ confirmation: "required", tests: "tests/*.json" });
  });

  it("refuses confirmation on a read tool", () => {
    const result = manifestSchema.safeParse({ ...base, type: "function", effect: "read", timeoutSeconds: 5, confirmation: "none" });
    expect(result.success).toBe(false);
  });

  it("turns a function package's top level into one tool policy", () => {
    const parsed = manifestSchema.parse({ ...base, name: "order-lookup", type: "function", effect: "read", timeoutSeconds: 5 });
    expect(toolPolicies(parsed, "get_order")).toEqual([{ name: "get_order", effect: "read", timeoutSeconds: 5 }]);
  });

  it("names a tool for the model as package__tool with dashes turned into underscores", () => {
    expect(modelToolName("order-lookup", "get_order")).toBe("order_lookup__get_order");
  });
});
