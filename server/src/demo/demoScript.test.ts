// The offline demo model understands the demo's phrases: each leads to the right tool with the right
// arguments, write outcomes get a truthful sentence, and anything else gets the plain offline notice.
import { describe, expect, test } from "vitest";
import type { ModelStreamPart } from "../model/model.ts";
import { createDemoModel, DEMO_CUSTOMER } from "./demoScript.ts";

async function ask(text: string, role: "user" | "system" = "user"): Promise<{ text: string; calls: { name: string; args: unknown }[] }> {
  const parts: ModelStreamPart[] = [];
  for await (const part of createDemoModel().stream({ messages: [{ role: "system", content: "instructions" }, { role, content: text }], tools: [] } as never)) parts.push(part);
  return {
    text: parts.map((part) => (part.type === "text-delta" ? part.text : "")).join(""),
    calls: parts.flatMap((part) => (part.type === "tool-call" ? [{ name: part.call.name, args: JSON.parse(part.call.arguments) }] : [])),
  };
}

const CASES: [string, string, Record<string, unknown>][] = [
  ["where is my order SO-1002", "orders__get_order", { orderId: "SO-1002" }],
  ["Where is order SO-1003?", "tracking__track_order", { orderId: "SO-1003" }],
  ["track my order", "tracking__track_order", {}],
  ["cancel order SO-1002", "orders__cancel_order", { orderId: "SO-1002" }],
  ["Please cancel my order SO-1001", "orders__cancel_order", { orderId: "SO-1001" }],
  ["stores near me", "stores__find_stores", {}],
  ["stores in Maribor", "stores__find_stores", { city: "Maribor" }],
  ["book an appointment", "appointments__find_slots", {}],
  ["add a note to order SO-1003: leave it with the neighbour", "orders__add_order_note", { orderId: "SO-1003", text: "leave it with the neighbour" }],
  ["Book slot SL-ST-LJ1-fitting-20261203T09 (Thu 3 Dec, 10:00, fitting)", "booking__book_slot", { slotId: "SL-ST-LJ1-fitting-20261203T09", customerName: DEMO_CUSTOMER.name, reminder: "email" }],
  ["compare plans", "plans__compare_plans", { focus: "price" }],
  ["show products", "products__search_products", {}],
  ["Tell me more about the Merino hoodie", "products__search_products", { query: "Merino hoodie" }],
  ["my invoice", "invoices__get_invoice", { orderId: "SO-1004" }],
  ["Send me the invoice for order SO-1003", "invoices__get_invoice", { orderId: "SO-1003" }],
  ["my returns", "returns__list_returns", { orderId: "SO-1004" }],
  ["my orders", "orders__list_orders", { email: DEMO_CUSTOMER.email }],
  ["how do refunds work", "help__help_article", { question: "refund" }],
  ["change my address to Slovenska cesta 1, 1000 Ljubljana", "account__update_address", { street: "Slovenska cesta 1", postalCode: "1000", city: "Ljubljana" }],
];

describe("the offline demo model", () => {
  test.each(CASES)("'%s' calls %s with the right arguments", async (text, name, args) => {
    const { calls } = await ask(text);
    expect(calls).toEqual([{ name, args }]);
  });

  test("help and anything it does not understand say plainly that this is the offline demo and what to try", async () => {
    for (const text of ["help", "what's the weather like?"]) {
      const reply = await ask(text);
      expect(reply.calls).toEqual([]);
      expect(reply.text).toContain("offline demo");
      expect(reply.text).toContain("where is my order SO-1002");
      expect(reply.text).toContain("OPENAI_API_KEY");
    }
  });

  test("write outcomes are not said a second time (the card says done, not done or nothing changed); pending says it is being checked, without repeating \"don't send it again\"", async () => {
    const applied = (await ask("[write orders/cancel_order, proposal w1] outcome: applied. The change happened.", "system")).text;
    expect(applied).toMatch(/^Anything else\?/);
    const pending = (await ask("[write orders/cancel_order, proposal w1] outcome: pending. The change is not confirmed yet.", "system")).text;
    expect(pending).toContain("checking with the shop");
    expect(pending).not.toMatch(/send it again/i);
    expect((await ask("[write orders/cancel_order, proposal w1] outcome: not applied. The provider definitely did not make the change: shipped", "system")).text).not.toMatch(/done|cancelled/i);
    expect((await ask("[write orders/cancel_order, proposal w1] the customer declined. Nothing ran.", "system")).text).toMatch(/^Anything else\?/);
  });

  test("the line after a tool follows what the tool did: no \"check and confirm\" when no card came, no PDF promised when there is none", async () => {
    const after = async (user: string, tool: string) => {
      const parts: ModelStreamPart[] = [];
      const messages = [
        { role: "system", content: "instructions" },
        { role: "user", content: user },
        { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "x", arguments: "{}" }] },
        { role: "tool", toolCallId: "c1", name: "x", content: tool },
      ];
      for await (const part of createDemoModel().stream({ messages, tools: [] } as never)) parts.push(part);
      return parts.map((part) => (part.type === "text-delta" ? part.text : "")).join("");
    };
    expect((await ask("cancel order SO-1001")).text).toBe("");
    expect(await after("cancel order SO-1001", "write_blocked: an earlier write (orders/cancel_order) still waits")).toBe("Once your earlier request has finished, ask me again.");
    expect(await after("my invoice", '{"invoiceId":"INV-1004"}\n[1 file(s) delivered to the customer as downloads: INV-1004.pdf.]')).toContain("with the PDF to download");
    const noFile = await after("my invoice", '{"invoiceId":"INV-1004"}');
    expect(noFile).toContain("Here is the invoice");
    expect(noFile).not.toContain("PDF");
    expect(await after("my invoice", "[1 file(s) were not delivered: this channel cannot receive files.]")).toContain("cannot be sent here");
    // Sign in for a visitor who has not; verify again for one whose sign-in is not strong or recent enough (the widget's button says the same).
    expect(await after("my orders", "customer_not_verified: this tool acts for a verified customer")).toBe("Please sign in with the button above; I'll go on as soon as you have.");
    expect(await after("change my address", "step_up_required: level high")).toBe("Please verify again with the button above; I'll go on as soon as you have.");
    // A write that needs no confirmation has run when the model goes on: its card says done, the model goes on (not silence).
    const note = "add a note to order SO-1003: leave it with the neighbour";
    expect(await after(note, "[write orders/add_order_note, proposal w1] outcome: applied. The change happened. Result: {}")).toMatch(/^Anything else\?/);
    expect(await after(note, "[write orders/add_order_note, proposal w1] outcome: not applied. The provider definitely did not make the change: order closed")).toMatch(/^Anything else\?/);
    const unknown = await after(note, "[write orders/add_order_note, proposal w1] outcome: unknown. The change is not confirmed yet.");
    expect(unknown).toContain("checking with the shop");
    expect(unknown).not.toMatch(/done|went through/i);
  });

  test("after the customer verifies for a waiting read, the same request is answered again", async () => {
    const parts: ModelStreamPart[] = [];
    const messages = [
      { role: "system", content: "instructions" },
      { role: "user", content: "where is my order SO-1002" },
      { role: "assistant", content: "", toolCalls: [{ id: "c1", name: "orders__get_order", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", name: "orders__get_order", content: "customer_not_verified: ..." },
      { role: "assistant", content: "Please verify" },
      { role: "system", content: "The customer is verified (level standard). Continue with their last request now." },
    ];
    for await (const part of createDemoModel().stream({ messages, tools: [] } as never)) parts.push(part);
    expect(parts.flatMap((part) => (part.type === "tool-call" ? [part.call.name] : []))).toEqual(["orders__get_order"]);
  });
});
