import { describe, expect, it } from "vitest";
import { evalExpectationSchema, type EvalExpectation } from "@caplo/shared";
import { matchArgs } from "./argsMatch.ts";
import { checkExpectation, emptyObservation, mergeObservations, type Observation } from "./assertions.ts";
import { parseMinPass, reaches } from "./evalSuite.ts";

const check = (raw: unknown, seen: Observation) => checkExpectation(evalExpectationSchema.parse(raw) as EvalExpectation, seen);

function observed(): Observation {
  return {
    ...emptyObservation(),
    calls: [
      { tool: "orders/get_order", args: { orderId: "SO-1002", verbose: true } },
      { tool: "orders/cancel_order", args: { orderId: "SO-1002", reason: "Ordered twice" } },
    ],
    proposals: [{ tool: "orders/cancel_order", args: { orderId: "SO-1002", reason: "Ordered twice" }, fields: { Order: "SO-1002", Card: "4242" }, confirmation: "required" }],
    questions: [{ tool: "tracking/track_order", fields: ["orderId", "email"] }],
    replies: ["Here is the cancellation.", "Done. The shop confirmed it."],
    steps: 3,
    tokens: 120,
  };
}

describe("argument matching", () => {
  it("exact ignores key order but nothing else", () => {
    expect(matchArgs("exact", { b: 1, a: [1, { c: 2 }] }, { a: [1, { c: 2 }], b: 1 })).toEqual([]);
    expect(matchArgs("exact", { a: 1 }, { a: 1, b: 2 })[0]).toContain("expected exactly");
  });
  it("subset checks the listed keys only, with $match and $any", () => {
    expect(matchArgs("subset", { orderId: { $match: "^SO-" } }, { orderId: "SO-1", extra: 1 })).toEqual([]);
    expect(matchArgs("subset", { orderId: "SO-2" }, { orderId: "SO-1" })).toEqual(['/orderId: expected "SO-2", got "SO-1"']);
  });
  it("pattern treats every expected string as a regular expression of the value as text", () => {
    expect(matchArgs("pattern", { orderId: "^SO-\\d{4}$", qty: "^[1-3]$" }, { orderId: "SO-1002", qty: 2 })).toEqual([]);
    expect(matchArgs("pattern", { orderId: "^SO-\\d{4}$" }, { orderId: "SO-12" })[0]).toContain("/orderId: expected a value matching");
    expect(matchArgs("pattern", { orderId: "." }, {})[0]).toContain("got undefined");
  });
});

describe("each check passes on what happened and fails, saying why, otherwise", () => {
  it("called, with exact, subset and pattern arguments and a count", () => {
    expect(check({ called: { tool: "orders/get_order", args: { orderId: "SO-1002" } } }, observed())).toBeUndefined();
    expect(check({ called: { tool: "orders/get_order", args: { orderId: "SO-1002" }, match: "exact" } }, observed())).toContain("expected exactly");
    expect(check({ called: { tool: "orders/get_order", args: { orderId: "SO-10\\d\\d" }, match: "pattern" } }, observed())).toBeUndefined();
    expect(check({ called: { tool: "orders/list_orders" } }, observed())).toBe("called orders/list_orders: the model called orders/get_order, orders/cancel_order");
    expect(check({ called: { tool: "orders/get_order", times: 2 } }, observed())).toContain("1 matching calls");
  });
  it("notCalled", () => {
    expect(check({ notCalled: { tool: "orders/list_orders" } }, observed())).toBeUndefined();
    expect(check({ notCalled: { tool: "orders/get_order", args: { orderId: "SO-1002" } } }, observed())).toContain("it was called with");
    expect(check({ notCalled: { tool: "orders/get_order", args: { orderId: "SO-9" } } }, observed())).toBeUndefined();
  });
  it("proposed, with arguments and review card fields; noWrite", () => {
    expect(check({ proposed: { tool: "orders/cancel_order", args: { orderId: "SO-1002" }, fields: { Order: "SO-1002", Card: "4242" } } }, observed())).toBeUndefined();
    expect(check({ proposed: { tool: "orders/cancel_order", fields: { Order: "SO-1003" } } }, observed())).toContain('field "Order": expected "SO-1003", got "SO-1002"');
    expect(check({ proposed: { tool: "orders/cancel_order", fields: { Reason: "x" } } }, observed())).toContain("no such field");
    expect(check({ proposed: { tool: "booking/book_slot" } }, observed())).toContain("the proposals were orders/cancel_order");
    expect(check({ noWrite: true }, observed())).toContain("proposed orders/cancel_order");
    expect(check({ noWrite: true }, emptyObservation())).toBeUndefined();
    expect(check({ proposed: { tool: "orders/cancel_order" } }, emptyObservation())).toContain("no write was proposed");
  });
  it("handoff, elicited and reply", () => {
    const handed = { ...emptyObservation(), handoffs: [{ queue: "support" }] };
    expect(check({ handoff: true }, handed)).toBeUndefined();
    expect(check({ handoff: { queue: "billing" } }, handed)).toContain("handed to support");
    expect(check({ handoff: true }, observed())).toContain("not handed");
    expect(check({ elicited: { fields: ["email"] } }, observed())).toBeUndefined();
    expect(check({ elicited: { fields: ["email"], tool: "orders/get_order" } }, observed())).toContain("no tool asked");
    expect(check({ elicited: { fields: ["phone"] } }, observed())).toContain("asked for orderId, email");
    expect(check({ reply: { contains: "confirmed it" } }, observed())).toBeUndefined();
    expect(check({ reply: { matches: "^Here[\\s\\S]*Done" } }, observed())).toBeUndefined();
    expect(check({ reply: { notContains: "Done" } }, observed())).toContain("the reply was");
  });
  it("maxSteps and maxTokens, at the limit and over it; tokens the model never reported fail a token limit", () => {
    expect(check({ maxSteps: 3 }, observed())).toBeUndefined();
    expect(check({ maxSteps: 2 }, observed())).toBe("at most 2 model steps: took 3");
    expect(check({ maxTokens: 120 }, observed())).toBeUndefined();
    expect(check({ maxTokens: 119 }, observed())).toBe("at most 119 tokens: used 120");
    expect(check({ maxTokens: 10 }, { ...observed(), tokens: null })).toContain("reported no token usage");
    expect(mergeObservations([observed(), { ...observed(), tokens: null }]).tokens).toBeNull();
    expect(mergeObservations([observed(), observed()]).steps).toBe(6);
  });
});

describe("the pass threshold", () => {
  it("reads rates and percentages exactly, and refuses anything else", () => {
    expect(parseMinPass("0.7")).toBe(7000);
    expect(parseMinPass("70%")).toBe(7000);
    expect(parseMinPass("1")).toBe(10_000);
    expect(parseMinPass("0")).toBe(0);
    expect(parseMinPass("99.5%")).toBe(9950);
    for (const bad of ["1.5", "101%", "-0.1", "abc", "", "0.12345", ".5"]) expect(parseMinPass(bad)).toBeUndefined();
  });
  it("exactly at the threshold passes, just under fails (no floating point slip at 7 of 10)", () => {
    expect(reaches(7, 10, 7000)).toBe(true);
    expect(reaches(6, 10, 7000)).toBe(false);
    expect(reaches(2, 3, 6667)).toBe(false);
    expect(reaches(2, 3, 6666)).toBe(true);
    expect(reaches(0, 5, 0)).toBe(true);
  });
});
