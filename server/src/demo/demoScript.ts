// The offline demo's scripted model: rules that understand the demo's phrases and call the right demo
// tool with the right arguments, written as JSON-ready data (the same format `caplo serve --script` reads).
import { ScriptedModel, type ScriptedRule } from "../model/scripted.ts";

type Pattern = { regex: string; flags?: string };
type Call = { name: string; args?: Record<string, unknown> };
type Case = { tool: Pattern; text: string };
export type DemoRule = { when?: Pattern; whenNote?: Pattern; replayUser?: boolean; replies: { text?: string; toolCalls?: Call[]; cases?: Case[] }[] };

/** The demo customer the page signs in as (the shop API's first customer). */
export const DEMO_CUSTOMER = { id: "CUS-1001", name: "Ana Novak", email: "ana.novak@example.com" } as const;

export const DEMO_TRY_TEXT =
  "This is Caplo's **offline demo**: no AI model is connected, so I understand only the demo's phrases. Try:\n" +
  "- *where is my order SO-1002*\n- *track my order*\n- *cancel order SO-1001* (or SO-1002, which takes a few seconds, or SO-1003, which has shipped)\n" +
  "- *add a note to order SO-1003: leave it with the neighbour* (a write that needs no confirmation)\n" +
  "- *stores near me*\n- *book an appointment* (then pick a time)\n- *compare plans*\n- *show products*\n- *my invoice*\n- *my returns*\n- *how do refunds work*\n" +
  "- *change my address to Slovenska cesta 1, 1000 Ljubljana* (after **Sign in as demo customer** on the page)\n- *talk to a person*\n\n" +
  "Set OPENAI_API_KEY before `npm start` to talk to a real model.";

const ci = (regex: string): Pattern => ({ regex, flags: "i" });
const ANYTHING_ELSE = "Anything else? (offline demo: type *help* to see what I understand)";
/**
 * What the model says after a tool, by what the tool did: the line follows the result, never the plan.
 * A refused or failed call is said as such; a read that needs the customer to verify waits for it.
 */
const AFTER_TOOL: Case[] = [
  { tool: ci("^write_blocked"), text: "Once your earlier request has finished, ask me again." },
  { tool: ci("^customer_not_verified"), text: "Please sign in with the button above; I'll go on as soon as you have." },
  { tool: ci("^step_up_required"), text: "Please verify again with the button above; I'll go on as soon as you have." },
  { tool: ci("^(error|tool_failed|tool_unknown|arguments_invalid|selector_refused)"), text: "Sorry, that did not work. Please check what you asked for and try again." },
];
const read = (text: string | undefined, name: string, args: Record<string, unknown> = {}, cases: Case[] = []) => ({
  replies: [{ toolCalls: [{ name, args }] }, { cases: [...AFTER_TOOL, ...cases], text: text ? `${text} ${ANYTHING_ELSE}` : ANYTHING_ELSE }],
});
/** What the model says while a write's outcome is not confirmed yet (pending or unknown): a status check will tell. */
const CHECKING = "I'm checking with the shop and will tell you here as soon as it answers.";
/**
 * A write: the review card is the message (no "please confirm" before it is known that a card appears). A
 * write that needs no confirmation has run by the time the model goes on: it says what follows its outcome.
 */
const write = (name: string, args: Record<string, unknown>) => ({
  replies: [
    { toolCalls: [{ name, args }] },
    {
      cases: [
        ...AFTER_TOOL,
        { tool: ci("outcome: (applied|not applied)"), text: ANYTHING_ELSE },
        { tool: ci("outcome: (pending|unknown)"), text: CHECKING },
      ],
      text: "",
    },
  ],
});
const INVOICE_FILE: Case[] = [
  { tool: ci("file\\(s\\) delivered to the customer as downloads: "), text: "Here is the invoice, with the PDF to download." },
  { tool: ci("not delivered"), text: "Here is the invoice. The PDF cannot be sent here." },
];

/** First match wins: specific phrases before general ones; the last rule answers everything else. */
export const DEMO_RULES: DemoRule[] = [
  // A read waited for the customer to verify, and now they have: answer their request again.
  { whenNote: ci("Continue with their last request"), replayUser: true, replies: [] },
  // Outcomes of writes, as the engine notes them for the model. The card already says done, not done or
  // nothing changed (with the receipt or the reason): the model adds only what the card does not say.
  { whenNote: ci("outcome: applied"), replies: [{ text: ANYTHING_ELSE }] },
  { whenNote: ci("outcome: not applied"), replies: [{ text: ANYTHING_ELSE }] },
  { whenNote: ci("outcome: (pending|unknown)"), replies: [{ text: CHECKING }] },
  { whenNote: ci("declined"), replies: [{ text: ANYTHING_ELSE }] },
  { when: ci("^\\s*(help|hi|hello|hey|what can you do|\\?)\\s*[.!?]*\\s*$"), replies: [{ text: DEMO_TRY_TEXT }] },
  { when: ci("talk to a (person|human)|real person|someone from the (team|shop)|human agent"), replies: [{ toolCalls: [{ name: "handoff_to_team", args: { reason: "the customer asked for a person" } }] }] },
  { when: ci("cancel(?:\\s+my)?(?:\\s+order)?\\s*#?(SO-\\d{4})"), ...write("orders__cancel_order", { orderId: "$1" }) },
  { when: ci("\\bcancel"), replies: [{ text: "Which order? Say for example *cancel order SO-1001*." }] },
  { when: ci("note (?:to|on|for) (?:order )?(SO-\\d{4})[:,]?\\s*(.+)"), ...write("orders__add_order_note", { orderId: "$1", text: "$2" }) },
  { when: ci("invoice.*?(SO-\\d{4})"), ...read("Here is the invoice.", "invoices__get_invoice", { orderId: "$1" }, INVOICE_FILE) },
  { when: ci("invoice"), ...read("Here is the invoice of your latest delivered order, SO-1004.", "invoices__get_invoice", { orderId: "SO-1004" }, INVOICE_FILE) },
  { when: ci("return.*?(SO-\\d{4})"), ...read(undefined, "returns__list_returns", { orderId: "$1" }) },
  { when: ci("\\breturns?\\b(?!.*(refund|work|policy|how))"), ...read("These are the returns of your order SO-1004.", "returns__list_returns", { orderId: "SO-1004" }) },
  { when: ci("(?:\\btrack\\b|where is order).*?(SO-\\d{4})"), ...read(undefined, "tracking__track_order", { orderId: "$1" }) },
  { when: ci("\\btrack"), ...read(undefined, "tracking__track_order", {}) },
  { when: ci("my orders|list (?:my )?orders|all (?:my )?orders"), ...read(`These are the orders of ${DEMO_CUSTOMER.email}.`, "orders__list_orders", { email: DEMO_CUSTOMER.email }) },
  { when: ci("order\\s*#?(SO-\\d{4})"), ...read(undefined, "orders__get_order", { orderId: "$1" }) },
  { when: ci("book slot (SL-[A-Za-z0-9-]+)"), ...write("booking__book_slot", { slotId: "$1", customerName: DEMO_CUSTOMER.name, reminder: "email" }) },
  { when: ci("appointment|fitting|tailoring|styling|\\bbook"), ...read(undefined, "appointments__find_slots", {}) },
  { when: ci("stores? in (ljubljana|maribor)"), ...read(undefined, "stores__find_stores", { city: "$1" }) },
  { when: ci("\\bstores?\\b|near me|opening hours|where are you"), ...read(undefined, "stores__find_stores", {}) },
  { when: ci("i would like the (\\w+) plan"), replies: [{ text: "Nice choice! In this offline demo plans can't be bought, but a real agent could hand this to a tool." }] },
  { when: ci("plans?\\b|membership|compare"), ...read(undefined, "plans__compare_plans", { focus: "price" }) },
  { when: ci("tell me more about the (.+)"), ...read(undefined, "products__search_products", { query: "$1" }) },
  { when: ci("\\bshoes|sneakers"), ...read(undefined, "products__search_products", { category: "shoes" }) },
  { when: ci("\\b(wool|hoodie|tee|jacket|scarf|cap)\\b"), ...read(undefined, "products__search_products", { query: "$1" }) },
  { when: ci("products?|show me|what do you sell|catalog"), ...read(undefined, "products__search_products", {}) },
  { when: ci("address to (.+?),\\s*(\\d{4})\\s+(.+?)\\.?$"), ...write("account__update_address", { street: "$1", postalCode: "$2", city: "$3" }) },
  { when: ci("address"), ...write("account__update_address", { street: "Slovenska cesta 1", postalCode: "1000", city: "Ljubljana" }) },
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
    ...(rule.replayUser && { replayUser: true }),
    replies: rule.replies.map(({ cases, ...reply }) => ({ ...reply, ...(cases && { cases: cases.map((entry) => ({ tool: pattern(entry.tool)!, text: entry.text })) }) })),
  }));
}

/** The offline demo model (also what `caplo demo` hands to `caplo serve` as its script). */
export function createDemoModel(): ScriptedModel {
  return new ScriptedModel(scriptedRules(), { id: "demo", fallback: DEMO_TRY_TEXT });
}
