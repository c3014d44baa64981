import { describe, expect, it } from "vitest";
import { EVAL_CASES_MAX_BYTES, parseEvalCases } from "./evalCases.ts";

const valid = `apiVersion: v1
kind: EvalCases
agent: demo-shop
reads: fixtures
cases:
  - name: looks up an order
    channel: whatsapp
    signIn: { level: standard, ref: CUS-1 }
    turns:
      - customer: where is SO-1002
        expect:
          - called: { tool: orders/get_order, args: { orderId: SO-1002 }, match: exact }
          - noWrite: true
      - customer: cancel it
        confirm: { outcome: applied, result: { orderId: SO-1002 } }
        expect:
          - proposed: { tool: orders/cancel_order, fields: { Order: SO-1002 } }
          - reply: { matches: "done|cancelled" }
    expect:
      - maxSteps: 6
`;

function errors(text: string) {
  const parsed = parseEvalCases(text);
  if (parsed.ok) throw new Error("expected errors");
  return parsed.errors;
}

describe("the evaluation cases file", () => {
  it("parses a valid file with its defaults filled in", () => {
    const parsed = parseEvalCases(valid);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const [first] = parsed.cases.cases;
    expect(parsed.cases.channel).toBe("web");
    expect(first!.signIn).toEqual({ level: "standard", ref: "CUS-1", id: "eval-customer", authAgeSeconds: 0 });
    expect(first!.turns[0]!.expect[0]).toEqual({ called: { tool: "orders/get_order", args: { orderId: "SO-1002" }, match: "exact" } });
    // A check without `match` compares as a subset.
    expect(first!.turns[1]!.expect[0]!.proposed!.match).toBe("subset");
  });

  it("refuses an unknown field at the key itself, with its YAML path, line and column", () => {
    const [error] = errors(valid.replace("    channel: whatsapp\n", "    chanel: whatsapp\n"));
    expect(error).toEqual({ code: "eval_cases_invalid", path: "cases[0].chanel", message: 'unknown field "chanel": other fields are refused', line: 7, column: 5 });
  });

  it("locates a bad value deep in a turn's checks", () => {
    const [error] = errors(valid.replace("tool: orders/get_order", "tool: get_order"));
    expect(error!.path).toBe("cases[0].turns[0].expect[0].called.tool");
    expect(error!.message).toContain("package/tool");
    expect(error).toMatchObject({ line: 12, column: 23 });
  });

  it("a check names exactly one thing", () => {
    const [error] = errors(valid.replace("          - noWrite: true", "          - { noWrite: true, maxSteps: 2 }"));
    expect(error!.path).toBe("cases[0].turns[0].expect[1]");
    expect(error!.message).toContain("names noWrite and maxSteps");
  });

  it("a turn confirms or declines, and an outcome's fields fit the outcome", () => {
    expect(errors(valid.replace("        confirm: {", "        decline: true\n        confirm: {"))[0]!.path).toBe("cases[0].turns[1].decline");
    const [error] = errors(valid.replace("outcome: applied, result: { orderId: SO-1002 }", "outcome: pending, result: { orderId: SO-1002 }"));
    expect(error).toMatchObject({ path: "cases[0].turns[1].confirm.result", message: "result is for outcome applied only" });
  });

  it("refuses two cases with the same name, a bad regular expression and a bad outcome", () => {
    const twice = valid + valid.slice(valid.indexOf("  - name:")).split("    expect:\n      - maxSteps")[0];
    expect(errors(twice).some((error) => error.path === "cases[1].name" && error.message.includes("already named"))).toBe(true);
    expect(errors(valid.replace('"done|cancelled"', '"(unclosed"'))[0]).toMatchObject({ path: "cases[0].turns[1].expect[1].reply.matches", message: "not a valid regular expression" });
    expect(errors(valid.replace("outcome: applied", "outcome: maybe"))[0]!.path).toBe("cases[0].turns[1].confirm.outcome");
  });

  it("reports YAML syntax errors with line and column, and refuses what is not a cases file", () => {
    const [syntax] = errors("apiVersion: v1\ncases: [\n");
    expect(syntax!.code).toBe("eval_cases_yaml_invalid");
    expect(syntax!.line).toBeGreaterThanOrEqual(2);
    expect(errors("- a\n- b\n")[0]).toMatchObject({ code: "eval_cases_invalid", path: "" });
    expect(errors(valid.replace("kind: EvalCases", "kind: Agent"))[0]!.path).toBe("kind");
    expect(errors(valid.replace(/cases:\n[\s\S]*/, "cases: []\n"))[0]!.path).toBe("cases");
  });

  it("refuses a file over the size limit before parsing it", () => {
    const big = `${valid}# ${"x".repeat(EVAL_CASES_MAX_BYTES)}\n`;
    expect(errors(big)[0]!.code).toBe("eval_cases_too_large");
  });
});
