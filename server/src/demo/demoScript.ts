// The offline demo's scripted model: rules that understand the demo's phrases and call the right demo
// tool with the right arguments, written as JSON-ready data (the same format `caplo serve --script` reads).
import { ScriptedModel, type ScriptedRule } from "../model/scripted.ts";

type Pattern = { regex: string; flags?: string };
type Call = { name: string; args?: Record<string, unknown> };
export type DemoRule = { when?: Pattern; whenNote?: Pattern; replies: { text?: string; toolCalls?: Call[] }[] };

/** The demo customer the page signs in as (the shop API's first customer). */
export const DEMO_CUSTOMER = { id: "CUS-1001", name: "Ana Novak", email: "ana.novak@example.com" } as const;

export const DEMO_TRY_TEXT =
  "This is Caplo's **offline demo**: no AI model is connected, so I understand only the demo's phrases. Try:\n" +
  "- *where is my order SO-1002*\n- *track my order*\n- *cancel order SO-1001* (or SO-1002, which takes a few seconds, or SO-1003, which has shipped)\n" +
  "- *add a note to order SO-1003: leave it with the neighbour* (a write that needs no confirmation)\n" +
  "- *stores near me*\n- *book an appointment* (then pick a time)\n- *compare plans*\n- *show products*\n- *my invoice*\n- *my returns*\n- *how do refunds work*\n" +
  "- *change my address to Slovenska cesta 1, 1000 Ljubljana* (after **Sign in as demo customer** on the page)\n\n" +
  "Set OPENAI_API_KEY before `npm start` to talk to a real model.";

const ci = (regex: string): Pattern => ({ regex, flags: "i" });
const read = (text: string | undefined, name: string, args: Record<string, unknown> = {}) => ({
  replies: [{ ...(text !== undefined && { text }), toolCalls: [{ name, args }] }, { text: "Anything else? (offline demo: type *help* to see what I understand)" }],
});

/** First match wins: specific phrases before general ones; the last rule answers everything else. */
export const DEMO_RULES: DemoRule[] = [
  // Outcomes of writes, as the engine notes them for the model.
  { whenNote: ci("outcome: applied"), replies: [{ text: "Done. The shop confirmed it." }] },
  { whenNote: ci("outcome: not applied"), replies: [{ text: "The shop did not make that change, so nothing happened." }] },
  { whenNote: ci("outcome: (pending|unknown)"), replies: [{ text: "The shop has not confirmed it yet. Please don't send it again: I'm checking, and the card above will show the result as soon as the shop answers." }] },
  { whenNote: ci("declined"), replies: [{ text: "All right, I left it as it was." }] },
  { when: ci("^\\s*(help|hi|hello|hey|what can you do|\\?)\\s*[.!?]*\\s*$"), replies: [{ text: DEMO_TRY_TEXT }] },
  { when: ci("cancel(?:\\s+my)?(?:\\s+order)?\\s*#?(SO-\\d{4})"), replies: [{ text: "Here is the cancellation. Please check it and confirm.", toolCalls: [{ name: "orders__cancel_order", args: { orderId: "$1" } }] }] },
  { when: ci("\\bcancel"), replies: [{ text: "Which order? Say for example *cancel order SO-1001*." }] },
  { when: ci("note (?:to|on|for) (?:order )?(SO-\\d{4})[:,]?\\s*(.+)"), replies: [{ toolCalls: [{ name: "orders__add_order_note", args: { orderId: "$1", text: "$2" } }] }] },
  { when: ci("invoice.*?(SO-\\d{4})"), ...read("Here is the invoice, with the PDF to download.", "invoices__get_invoice", { orderId: "$1" }) },
  { when: ci("invoice"), ...read("Here is the invoice of your latest delivered order, SO-1004, with the PDF to download.", "invoices__get_invoice", { orderId: "SO-1004" }) },
  { when: ci("return.*?(SO-\\d{4})"), ...read(undefined, "returns__list_returns", { orderId: "$1" }) },
  { when: ci("\\breturns?\\b(?!.*(refund|work|policy|how))"), ...read("These are the returns of your order SO-1004.", "returns__list_returns", { orderId: "SO-1004" }) },
  { when: ci("(?:\\btrack\\b|where is order).*?(SO-\\d{4})"), ...read(undefined, "tracking__track_order", { orderId: "$1" }) },
  { when: ci("\\btrack"), ...read(undefined, "tracking__track_order", {}) },
  { when: ci("my orders|list (?:my )?orders|all (?:my )?orders"), ...read(`Here are the orders of ${DEMO_CUSTOMER.email}.`, "orders__list_orders", { email: DEMO_CUSTOMER.email }) },
  { when: ci("order\\s*#?(SO-\\d{4})"), ...read(undefined, "orders__get_order", { orderId: "$1" }) },
  { when: ci("book slot (SL-[A-Za-z0-9-]+)"), replies: [{ text: "Please check the booking and confirm.", toolCalls: [{ name: "booking__book_slot", args: { slotId: "$1", customerName: DEMO_CUSTOMER.name, reminder: "email" } }] }] },
  { when: ci("appointment|fitting|tailoring|styling|\\bbook"), ...read(undefined, "appointments__find_slots", {}) },
  { when: ci("stores? in (ljubljana|maribor)"), ...read(undefined, "stores__find_stores", { city: "$1" }) },
  { when: ci("\\bstores?\\b|near me|opening hours|where are you"), ...read(undefined, "stores__find_stores", {}) },
  { when: ci("i would like the (\\w+) plan"), replies: [{ text: "Nice choice! In this offline demo plans can't be bought, but a real agent could hand this to a tool." }] },
  { when: ci("plans?\\b|membership|compare"), ...read(undefined, "plans__compare_plans", { focus: "price" }) },
  { when: ci("tell me more about the (.+)"), ...read(undefined, "products__search_products", { query: "$1" }) },
  { when: ci("\\bshoes|sneakers"), ...read(undefined, "products__search_products", { category: "shoes" }) },
  { when: ci("\\b(wool|hoodie|tee|jacket|scarf|cap)\\b"), ...read(undefined, "products__search_products", { query: "$1" }) },
  { when: ci("products?|show me|what do you sell|catalog"), ...read(undefined, "products__search_products", {}) },
  { when: ci("address to (.+?),\\s*(\\d{4})\\s+(.+?)\\.?$"), replies: [{ text: "Please check the new address and confirm.", toolCalls: [{ name: "account__update_address", args: { street: "$1", postalCode: "$2", city: "$3" } }] }] },
  { when: ci("address"), replies: [{ text: "Please check the new address and confirm.", toolCalls: [{ name: "account__update_address", args: { street: "Slovenska cesta 1", postalCode: "1000", city: "Ljubljana" } }] }] },
  { when: ci("(refund|deliver|shipping)"), ...read(undefined, "help__help_article", { question: "$1" }) },
  { when: ci("how (?:do|can|long)"), ...read(undefined, "help__help_article", { question: "returns" }) },
  { when: ci("[\\s\\S]*"), replies: [{ text: `I'm sorry, I don't understand that here. ${DEMO_TRY_TEXT}` }] },
];

/** The JSON rules into the scripted model's rules. */
export function scriptedRules(rules: readonly DemoRule[] = DEMO_RULES): ScriptedRule[] {
  const pattern = (value: Pattern | undefined) => (value === undefined ? undefined : new RegExp(value.regex, value.flags));
  return rules.map((rule) => ({
    ...(rule.when && { when: pattern(rule.when) }),
    ...(rule.whenNote && { whenNote: pattern(rule.whenNote) }),
    replies: rule.replies,
  }));
}

/** The offline demo model (also what `caplo demo` hands to `caplo serve` as its script). */
export function createDemoModel(): ScriptedModel {
  return new ScriptedModel(scriptedRules(), { id: "demo", fallback: DEMO_TRY_TEXT });
}
