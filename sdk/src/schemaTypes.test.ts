import { describe, expectTypeOf, it } from "vitest";
import { defineTool, type FromSchema } from "./index.ts";

describe("types read from JSON Schema", () => {
  it("types required properties, optional ones, enums, arrays and nested objects", () => {
    const schema = {
      type: "object",
      properties: {
        orderId: { type: "string" },
        count: { type: "integer" },
        status: { type: "string", enum: ["processing", "shipped"] },
        tags: { type: "array", items: { type: "string" } },
        address: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
      required: ["orderId", "status"],
    } as const;
    expectTypeOf<FromSchema<typeof schema>>().toEqualTypeOf<{
      orderId: string;
      status: "processing" | "shipped";
      count?: number;
      tags?: string[];
      address?: { city: string };
    }>();
  });

  it("types a handler's arguments from inputSchema when no type arguments are given", () => {
    defineTool({
      name: "cancel_order",
      description: "Cancel an order.",
      inputSchema: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] },
      handler({ orderId }) {
        expectTypeOf(orderId).toEqualTypeOf<string>();
        return { orderId };
      },
    });
  });

  it("uses explicit <Input, Output> as given", () => {
    type Input = { orderId: string };
    type Output = { orderId: string; total: number };
    const tool = defineTool<Input, Output>({
      name: "get_order",
      description: "Get an order.",
      inputSchema: { type: "object", properties: { orderId: { type: "string" } }, required: ["orderId"] },
      handler: ({ orderId }) => ({ orderId, total: 1 }),
    });
    expectTypeOf(tool.handler).parameter(0).toEqualTypeOf<Input>();
  });
});
