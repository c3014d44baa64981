import { describe, expect, it } from "vitest";
import { checkElicitRequest, looksLikeCredential } from "./elicitationPolicy.ts";

const questions = { style: "questions" as const, fields: [{ name: "size" }, { name: "color" }] };
const choice = (count: number, label = "Option") => ({
  message: "Which size?",
  requestedSchema: { type: "object", properties: { size: { type: "string", enum: Array.from({ length: count }, (_, i) => `${i}`), enumNames: Array.from({ length: count }, (_, i) => `${label}${i}`) } }, required: ["size"] },
});

describe("elicitation policy", () => {
  it("recognises credential fields in names, camelCase and titles", () => {
    for (const text of ["password", "otp", "cardNumber", "card_number", "CVV", "pin", "Security code", "apiKey", "one-time code"]) {
      expect(looksLikeCredential(text), text).toBe(true);
    }
    for (const text of ["size", "color", "shipping", "spinach", "opinion", "company"]) {
      expect(looksLikeCredential(text), text).toBe(false);
    }
  });
  it("questions: 2 to 9 options", () => {
    expect(checkElicitRequest(choice(1), questions, 0)?.code).toBe("elicitation_question_options");
    expect(checkElicitRequest(choice(2), questions, 0)).toBeUndefined();
    expect(checkElicitRequest(choice(9), questions, 0)).toBeUndefined();
    expect(checkElicitRequest(choice(10), questions, 0)?.code).toBe("elicitation_question_options");
  });
  it("questions: labels of at most 20 characters", () => {
    expect(checkElicitRequest(choice(2, "x".repeat(19)), questions, 0)).toBeUndefined();
    expect(checkElicitRequest(choice(2, "x".repeat(20)), questions, 0)?.code).toBe("elicitation_question_label");
  });
  it("questions: one required field per request, and as many per call as declared fields", () => {
    expect(checkElicitRequest(choice(3), questions, 1)).toBeUndefined();
    expect(checkElicitRequest(choice(3), questions, 2)?.code).toBe("elicitation_too_many");
    const notRequired = { ...choice(3), requestedSchema: { ...choice(3).requestedSchema, required: [] } };
    expect(checkElicitRequest(notRequired, questions, 0)?.code).toBe("elicitation_question_shape");
  });
  it("questions: at most 8 per call even with more declared fields", () => {
    const many = { style: "questions" as const, fields: Array.from({ length: 12 }, (_, i) => ({ name: i === 0 ? "size" : `f${i}` })) };
    expect(checkElicitRequest(choice(3), many, 7)).toBeUndefined();
    expect(checkElicitRequest(choice(3), many, 8)?.code).toBe("elicitation_too_many");
  });
  it("a tool without declared elicitation cannot ask", () => {
    expect(checkElicitRequest(choice(3), undefined, 0)?.code).toBe("elicitation_not_declared");
  });
});
