// Turns through the engine: reads with progress and presentation, subjects and selectors, elicitation
// where the channel can answer, step-up on reads, handoff to the team, and recovery after a stop.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CANCEL, engineHarness, WHATSAPP, type Harness } from "./support/harness.ts";
import { ORDERS, ShopBackend } from "./support/shopTools.ts";

let h: Harness;
afterEach(async () => h?.close());

describe("reads", () => {
  it("a read runs at once with its static progress label, and its result goes to the model and, projected, to the customer", async () => {
    h = await engineHarness({ rules: [{ when: /order (SO-\d{4})/, replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: "$1" } }] }, { text: "Found it." }] }] });
    await h.say("where is my order SO-1234");
    const progress = await h.ofType("progress");
    expect(progress.map((p) => [p.state, p.label])).toEqual([
      ["start", "Looking up your order"],
      ["end", "Looking up your order"],
    ]);
    expect(progress[0]?.spoken).toBe("Let me find that order.");
    const [result] = await h.ofType("result");
    expect(result).toMatchObject({ layout: "detail", title: "Your order" });
    // Only the listed columns (and the money column's currency), card masked to its last four.
    expect(result!.items).toEqual([{ orderId: "SO-1234", status: "shipped", total: 42.5, card: "4242", currency: "EUR" }]);
    expect(JSON.stringify(await h.events())).not.toContain("VIP margin");
    // The model sees the tool's text.
    expect((await h.modelNotes()).some((note) => note.includes('"status":"shipped"'))).toBe(true);
    expect((await h.ofType("text")).at(-1)?.text).toBe("Found it.");
  });

  it("a list layout shows at most its item limit (20 for a table), only listed primitive columns, last4 masked", async () => {
    h = await engineHarness({ rules: [{ when: "orders", replies: [{ toolCalls: [{ name: "shop__list_orders", args: {} }] }, { text: "Here they are." }] }] });
    await h.say("show my orders");
    const [result] = await h.ofType("result");
    expect(result!.items).toHaveLength(20);
    expect(result!.items[0]).toEqual({ id: "SO-1000", total: 10, card: "0100" });
    expect(result!.items.every((item) => !("secret" in item) && !("nested" in item))).toBe(true);
  });

  it("a read that returns stepUpRequired tells the customer they need to verify, and the model why", async () => {
    h = await engineHarness({ rules: [{ when: "order", replies: [{ toolCalls: [{ name: "shop__get_order", args: { orderId: ORDERS.stepUp } }] }, { text: "Please verify." }] }] });
    await h.say("my order please");
    expect((await h.ofType("step_up")).at(-1)).toMatchObject({ level: "high", text: "You need to verify your identity for this." });
    expect((await h.ofType("step_up")).at(-1)?.proposalId).toBeUndefined();
    expect((await h.modelNotes()).some((note) => note.startsWith("step_up_required: the customer must verify at level high"))).toBe(true);
    expect(await h.ofType("result")).toEqual([]);
  });

  it("unknown tools, arguments that are not a JSON object and invalid write arguments come back to the model as tool errors", async () => {
    h = await engineHarness({
      rules: [
        {
          when: "mess",
          replies: [
            {
              toolCalls: [
                { name: "shop__nope", args: {} },
                { name: "shop__get_order", args: "not json" },
                { name: "shop__cancel_order", args: { orderId: "bad" } },
              ],
            },
            { text: "sorry" },
          ],
        },
      ],
    });
    await h.say("make a mess");
    const notes = await h.modelNotes();
    expect(notes).toContain("tool_unknown: there is no tool named shop__nope.");
    expect(notes).toContain("arguments_invalid: the arguments must be one JSON object.");
    expect(notes.some((note) => note.startsWith("arguments_invalid: ") && note.includes("orderId"))).toBe(true);
    expect(await h.store.listWrites(h.conversation.id)).toEqual([]);
    expect(h.backend.invocations).toEqual([]);
  });
});

describe("files", () => {
  const rules = [{ when: "invoice", replies: [{ toolCalls: [{ name: "shop__invoice", args: { orderId: "SO-1002" } }] }, { text: "Here is your invoice." }] }];

  it("a file a read returns is kept and shown as a download where the channel can; the model never sees its bytes", async () => {
    h = await engineHarness({ rules });
    await h.say("my invoice");
    const [file] = await h.ofType("file");
    expect(file).toMatchObject({ name: "SO-1002.pdf", mimeType: "application/pdf" });
    expect(file!.url).toMatch(/^\/v1\/files\/f_[A-Za-z0-9_-]{32}$/);
    const stored = await h.store.getFile(file!.url.split("/").at(-1)!);
    expect(Buffer.from(stored!.bytes).toString()).toBe("%PDF-1.4\n% invoice SO-1002\n%%EOF\n");
    expect(file!.size).toBe(stored!.size);
    const note = (await h.modelNotes()).find((text) => text.startsWith("Invoice for"))!;
    expect(note).toContain("1 file(s) delivered to the customer as downloads: SO-1002.pdf");
    expect(note).not.toContain(Buffer.from("%PDF-1.4").toString("base64").slice(0, 8));
  });

  it("where the channel cannot take files, nothing is delivered and the model is told so", async () => {
    h = await engineHarness({ rules, capabilities: { ...WHATSAPP, files: false } });
    await h.say("my invoice");
    expect(await h.ofType("file")).toEqual([]);
    expect((await h.modelNotes()).find((text) => text.startsWith("Invoice for"))).toContain("1 file(s) were not delivered: this channel cannot receive files.");
  });
});

describe("subjects", () => {
  const rules = [
    { when: "mine", replies: [{ toolCalls: [{ name: "shop__my_orders", args: {} }] }, { text: "{{tool}}" }] },
    { when: "sneaky", replies: [{ toolCalls: [{ name: "shop__my_orders", args: { customerRef: "someone-else" } }] }, { text: "{{tool}}" }] },
  ];

  it("a subject tool without a verified customer does not run: the customer is asked to verify", async () => {
    h = await engineHarness({ rules });
    await h.say("show mine");
    expect(h.backend.invocations).toEqual([]);
    expect((await h.ofType("step_up")).at(-1)).toMatchObject({ level: "low" });
    expect((await h.modelNotes()).at(-1)).toMatch(/^customer_not_verified/);
  });

  it("a subject tool gets the verified subject in context and its selector filled from it, never from the model", async () => {
    h = await engineHarness({ rules });
    await h.engine.verify(h.conversation.id, { id: "cust-7", ref: "ref-cust-7", level: "standard", authTime: new Date(h.clock.now).toISOString() });
    await h.say("show mine");
    expect(h.backend.invocations).toEqual([{ tool: "my_orders", args: { customerRef: "ref-cust-7" }, subject: "cust-7" }]);
    await h.say("be sneaky");
    expect(h.backend.invocations).toHaveLength(1);
    expect((await h.modelNotes()).at(-1)).toBe("selector_refused: customerRef is filled by Caplo from the verified customer; leave it out.");
  });

  it("the model's tool definition leaves the selector out", async () => {
    const seen: unknown[] = [];
    h = await engineHarness({ rules });
    const tool = h.release.tools.find((candidate) => candidate.tool === "my_orders")!;
    const { modelParameters } = await import("../../server/src/engine/presentation.ts");
    seen.push(modelParameters(tool));
    expect(seen[0]).toMatchObject({ properties: { limit: { type: "integer" } }, required: [] });
    expect(JSON.stringify(seen[0])).not.toContain("customerRef");
  });
});

describe("files that fail a check", () => {
  it("a refused file is not delivered; the visitor is told it could not be delivered and the model why", async () => {
    const seen: string[] = [];
    h = await engineHarness({ rules: [{ when: "invoice", replies: [{ toolCalls: [{ name: "shop__invoice", args: { orderId: "SO-6666" } }] }, { text: "{{tool}}" }] }] });
    await h.say("my invoice");
    expect(await h.ofType("file")).toEqual([]);
    const texts = (await h.ofType("text")).map((message) => `${message.from}: ${message.text}`);
    expect(texts).toContain('system: A file could not be delivered: "SO-6666.pdf".');
    seen.push(...texts.filter((text) => text.startsWith("agent:")));
    expect(seen.at(-1)).toContain('[File "SO-6666.pdf" was refused and not delivered: the PDF contains JavaScript.]');
  });
});

describe("elicitation", () => {
  const rules = [{ when: "size", replies: [{ toolCalls: [{ name: "shop__pick_size", args: {} }] }, { text: "{{tool}}" }] }];

  it("where the channel can answer, the tool's question reaches the customer and their answer reaches the tool", async () => {
    h = await engineHarness({ rules });
    const turn = h.say("which size");
    let question;
    for (let i = 0; i < 100 && !question; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      question = (await h.ofType("question")).at(-1);
    }
    expect(question).toMatchObject({ style: "questions", message: "Which size?", fields: [{ name: "size", kind: "choice", required: true }] });
    expect(question!.fields[0]!.options!.map((option) => option.value)).toEqual(["S", "M", "L"]);
    const bad = await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: question!.elicitationId, action: "accept", content: { size: "XXL" } });
    expect(bad).toMatchObject({ ok: false, error: { code: "answer_invalid" } });
    const good = await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: question!.elicitationId, action: "accept", content: { size: "L" } });
    expect(good).toEqual({ ok: true });
    await turn;
    expect((await h.ofType("text")).at(-1)?.text).toBe("size L");
  });

  it("a question not answered within its wait expires: the tool sees cancel, and a late answer is told the question expired", async () => {
    h = await engineHarness({ rules, elicitTimeoutMs: 150 });
    await h.say("which size");
    const question = (await h.ofType("question")).at(-1);
    expect(question).toBeDefined();
    expect((await h.ofType("text")).at(-1)?.text).toBe("no size (cancel)");
    const late = await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: question!.elicitationId, action: "accept", content: { size: "L" } });
    expect(late).toMatchObject({ ok: false, error: { code: "question_expired", path: "elicitationId", message: expect.stringContaining("not answered within") } });
    // An id no question ever had is still just not open.
    const unknown = await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: "q_nonexistent", action: "decline" });
    expect(unknown).toMatchObject({ ok: false, error: { code: "question_not_open" } });
  });

  it("where the channel cannot answer, the tool sees a client without elicitation", async () => {
    h = await engineHarness({ rules, capabilities: { ...WHATSAPP, questions: false } });
    await h.say("which size");
    expect(await h.ofType("question")).toEqual([]);
    expect((await h.ofType("text")).at(-1)?.text).toBe("no way to ask: used the default size M");
  });
});

describe("form elicitation", () => {
  const rules = [{ when: "reach", replies: [{ toolCalls: [{ name: "shop__contact", args: {} }] }, { text: "{{tool}}" }] }];

  it("on the widget a form request shows its fields; a decline reaches the tool", async () => {
    h = await engineHarness({ rules });
    const turn = h.say("reach me");
    let question;
    for (let i = 0; i < 100 && !question; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      question = (await h.ofType("question")).at(-1);
    }
    expect(question).toMatchObject({
      style: "form",
      message: "How should we reach you?",
      fields: [
        { name: "email", kind: "string", required: true, title: "Email", format: "email" },
        { name: "days", kind: "integer", required: false, minimum: 1, maximum: 5 },
      ],
    });
    const wrongOwner = await h.engine.handle(h.conversation.id, "owner-2", { type: "answer", elicitationId: question!.elicitationId, action: "accept", content: { email: "a@b.example" } });
    expect(wrongOwner).toMatchObject({ ok: false, error: { code: "not_conversation_owner" } });
    const tooMany = await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: question!.elicitationId, action: "accept", content: { email: "a@b.example", days: 6 } });
    expect(tooMany).toMatchObject({ ok: false, error: { code: "answer_invalid" } });
    expect(await h.engine.handle(h.conversation.id, "owner-1", { type: "answer", elicitationId: question!.elicitationId, action: "decline" })).toEqual({ ok: true });
    await turn;
    expect((await h.ofType("text")).at(-1)?.text).toBe("no answer (decline)");
  });

  it("a channel without forms is not offered form elicitation", async () => {
    h = await engineHarness({ rules, capabilities: WHATSAPP });
    await h.say("reach me");
    expect(await h.ofType("question")).toEqual([]);
    expect((await h.ofType("text")).at(-1)?.text).toBe("no form: will email the address on file");
  });
});

describe("handoff", () => {
  const channels = { web: { handoff: { queue: "support", message: "Passing you to our support team." } } };
  const rules = [
    { when: "human", replies: [{ text: "One moment.", toolCalls: [{ name: "handoff_to_team", args: { reason: "asked" } }] }, { text: "SILENT" }] },
    { when: "hello", replies: [{ text: "Hi from the agent" }] },
  ];

  it("the agent hands over when the channel has a destination, stays silent while the team holds it, and answers again when handed back", async () => {
    h = await engineHarness({ rules, channels });
    await h.say("I want a human");
    expect((await h.ofType("handoff")).at(-1)).toMatchObject({ state: "requested", text: "Passing you to our support team." });
    expect((await h.store.getConversation(h.conversation.id))?.handoff).toMatchObject({ state: "requested", queue: "support" });
    await h.say("hello?");
    expect((await h.ofType("text")).map((m) => m.text)).not.toContain("Hi from the agent");
    expect(await h.engine.teamMessage(h.conversation.id, "ana", "too early")).toMatchObject({ ok: false, error: { code: "conversation_not_held" } });
    expect(await h.engine.takeOver(h.conversation.id, "ana")).toEqual({ ok: true });
    expect(await h.engine.takeOver(h.conversation.id, "bob")).toMatchObject({ ok: false, error: { code: "conversation_held" } });
    expect(await h.engine.teamMessage(h.conversation.id, "ana", "Hi, Ana here")).toEqual({ ok: true });
    expect((await h.ofType("text")).at(-1)).toMatchObject({ from: "team", text: "Hi, Ana here" });
    await h.say("hello again");
    expect((await h.ofType("text")).map((m) => m.text)).not.toContain("Hi from the agent");
    expect(await h.engine.handBack(h.conversation.id, "ana")).toEqual({ ok: true });
    await h.say("hello agent");
    expect((await h.ofType("text")).at(-1)).toMatchObject({ from: "agent", text: "Hi from the agent" });
    expect((await h.ofType("text")).map((m) => m.text)).not.toContain("SILENT");
  });

  it("without a handoff destination the model is not offered the handoff tool", async () => {
    h = await engineHarness({ rules });
    await h.say("I want a human");
    expect(await h.ofType("handoff")).toEqual([]);
    expect((await h.modelNotes()).at(-1)).toBe("tool_unknown: there is no tool named handoff_to_team.");
  });

  it("the team can take over a conversation that was never handed off", async () => {
    h = await engineHarness({ rules });
    expect(await h.engine.takeOver(h.conversation.id, "ana")).toEqual({ ok: true });
    await h.say("hello");
    expect((await h.ofType("text")).map((m) => m.text)).not.toContain("Hi from the agent");
  });
});

describe("recovery", () => {
  it("a write left running by a stop becomes unknown at startup, the customer is told, and a status check records the real outcome", async () => {
    const dir = mkdtempSync(join(tmpdir(), "caplo-recover-"));
    const backendFile = join(dir, "backend.json");
    try {
      h = await engineHarness({ dir, backend: new ShopBackend(backendFile), rules: [{ when: "cancel", replies: [{ toolCalls: [CANCEL(ORDERS.hangsAfterApplying)] }] }] });
      await h.say("cancel");
      const proposalId = (await h.lastReview()).proposalId;
      const hung = h.confirm(proposalId).catch(() => undefined); // never finishes: the tool hangs after applying
      for (let i = 0; i < 100 && (await h.store.getWrite(proposalId))?.state !== "running"; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect((await h.store.getWrite(proposalId))?.state).toBe("running");
      for (let i = 0; i < 100 && h.backend.applications.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      const key = (await h.store.getWrite(proposalId))!.idempotencyKey;
      const conversationId = h.conversation.id;
      // "Stop" the server: drop the engine without letting the call finish.
      // Nothing more reaches the store after this point, as after a crash.
      await h.store.close();
      await h.runner.close();
      await hung;
      h = await engineHarness({ dir, backend: new ShopBackend(backendFile), rules: [] });
      const recovered = await h.store.getWrite(proposalId);
      expect(recovered).toMatchObject({ state: "unknown", checkCount: 0, idempotencyKey: key });
      expect((await h.store.listTransitions(proposalId)).at(-1)).toMatchObject({ from: "running", to: "unknown", note: "recovered at startup" });
      expect((await h.ofType("outcome", conversationId)).at(-1)).toMatchObject({ proposalId, state: "unknown" });
      await h.advance(5000);
      expect((await h.store.getWrite(proposalId))?.state).toBe("applied");
      expect((await h.ofType("outcome", conversationId)).at(-1)).toMatchObject({ proposalId, state: "applied" });
      // The status check asked about the original key; the write itself never ran again.
      expect(h.requests.filter((call) => call.kind === "call")).toEqual([]);
      expect(h.requests.filter((call) => call.kind === "status").map((call) => call.idempotencyKey)).toEqual([key]);
    } finally {
      await h.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
