// Checks a tool's MCP form elicitation request before it reaches the visitor: only the fields the tool
// declares, never a credential, the questions style's shape, and the per-call question limit; and
// answers a call's requests (elicitationHandler), its clock paused while the visitor answers.
import type { ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import {
  ELICITATION_WAIT_SECONDS,
  QUESTION_OPTIONS_MAX,
  QUESTION_OPTIONS_MIN,
  QUESTION_OPTION_LABEL_MAX,
  QUESTIONS_PER_CALL_MAX,
  type Elicitation,
} from "@caplo/shared";
import type { ElicitRequest, ElicitResponse, LogLine } from "./api.ts";
import type { CallClock } from "./callClock.ts";

export type ElicitRefusal = { code: string; path: string; message: string };

/** Words that mark a field as asking for a credential: passwords, one-time codes, PINs, card data, keys. */
const CREDENTIAL =
  /pass(?:word|phrase|code)?|\bpwd\b|otp|one[-_ ]?time|\bpin\b|pin[-_ ]?(?:code|number)|\bcvv|\bcvc|\bcsc\b|security[-_ ]?code|card[-_ ]?(?:number|no\b|num)|\bpan\b|credit[-_ ]?card|iban|\bssn\b|social[-_ ]?security|secret|token|api[-_ ]?key|private[-_ ]?key|2fa|mfa|verification[-_ ]?code|auth(?:entication)?[-_ ]?code/i;

/** Whether a field name, title or description asks for a credential. Split camelCase so cardNumber matches. */
export function looksLikeCredential(text: string): boolean {
  const spaced = text.replace(/([a-z0-9])([A-Z])/g, "$1 $2");
  return CREDENTIAL.test(spaced) || CREDENTIAL.test(text);
}

export function checkElicitRequest(request: ElicitRequest, policy: Elicitation | undefined, askedSoFar: number): ElicitRefusal | undefined {
  if (!policy) return { code: "elicitation_not_declared", path: "/", message: "this tool declares no elicitation fields" };
  const schema = request.requestedSchema as { type?: unknown; properties?: Record<string, Record<string, unknown>>; required?: unknown };
  const properties = schema.properties ?? {};
  const names = Object.keys(properties);
  if (schema.type !== "object" || names.length === 0) return { code: "elicitation_schema", path: "/requestedSchema", message: "requestedSchema must be an object with properties" };
  const declared = new Set(policy.fields.map((field) => field.name));
  for (const name of names) {
    const path = `/requestedSchema/properties/${name}`;
    if (!declared.has(name)) return { code: "elicitation_field_not_declared", path, message: `field '${name}' is not among the tool's declared elicitation fields` };
    const property = properties[name] ?? {};
    const texts = [name, String(property.title ?? ""), String(property.description ?? "")];
    if (texts.some(looksLikeCredential) || property.format === "password") {
      return { code: "elicitation_credential", path, message: `field '${name}' asks for a credential, which Caplo never collects` };
    }
  }
  if (looksLikeCredential(request.message)) return { code: "elicitation_credential", path: "/message", message: "the request asks for a credential, which Caplo never collects" };
  if (policy.style === "questions") {
    const limit = Math.min(policy.fields.length, QUESTIONS_PER_CALL_MAX);
    if (askedSoFar >= limit) return { code: "elicitation_too_many", path: "/", message: `at most ${limit} questions per call` };
    if (names.length !== 1) return { code: "elicitation_question_shape", path: "/requestedSchema/properties", message: "a question names exactly one field" };
    const name = names[0]!;
    const property = properties[name] ?? {};
    const required = Array.isArray(schema.required) && schema.required.includes(name);
    const options = Array.isArray(property.enum) ? property.enum : Array.isArray(property.oneOf) ? property.oneOf : undefined;
    if (!required || property.type !== "string" || !options) {
      return { code: "elicitation_question_shape", path: `/requestedSchema/properties/${name}`, message: "a question is one required single choice (a string enum)" };
    }
    if (options.length < QUESTION_OPTIONS_MIN || options.length > QUESTION_OPTIONS_MAX) {
      return { code: "elicitation_question_options", path: `/requestedSchema/properties/${name}`, message: `a question has ${QUESTION_OPTIONS_MIN} to ${QUESTION_OPTIONS_MAX} options` };
    }
    const labels = Array.isArray(property.enumNames)
      ? property.enumNames
      : options.map((option: unknown) => (typeof option === "object" && option !== null ? (option as { title?: unknown; const?: unknown }).title ?? (option as { const?: unknown }).const : option));
    if (labels.some((label: unknown) => typeof label !== "string" || label.length > QUESTION_OPTION_LABEL_MAX)) {
      return { code: "elicitation_question_label", path: `/requestedSchema/properties/${name}`, message: `option labels are at most ${QUESTION_OPTION_LABEL_MAX} characters` };
    }
  }
  return undefined;
}

/**
 * Answers one call's elicitation requests: each is checked, then asked of the visitor through `ask`
 * while the call's clock is paused (the visitor's time does not count against timeoutSeconds). A wait
 * is cut at ELICITATION_WAIT_SECONDS (the engine's own limit ends it first) and the tool sees cancel.
 * Only the requested fields of an answer reach the tool.
 */
export function elicitationHandler(
  ask: (request: ElicitRequest) => Promise<ElicitResponse>,
  policy: Elicitation | undefined,
  clock: CallClock,
  log: (line: LogLine) => void,
  waitMs = ELICITATION_WAIT_SECONDS * 1000,
): (request: ElicitRequest) => Promise<ElicitResult> {
  let asked = 0;
  return async (request) => {
    const refusal = checkElicitRequest(request, policy, asked);
    if (refusal) {
      log({ level: "warn", message: `elicitation refused: ${refusal.message}`, data: { code: refusal.code, path: refusal.path }, at: new Date().toISOString() });
      throw new Error(`elicitation refused (${refusal.code}): ${refusal.message}`);
    }
    asked += 1;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<ElicitResponse>((resolve) => {
      timer = setTimeout(() => resolve({ action: "cancel" }), waitMs);
    });
    clock.pause();
    let answer: ElicitResponse;
    try {
      answer = await Promise.race([ask(request), expired]);
    } finally {
      clearTimeout(timer);
      clock.resume();
    }
    if (answer.action !== "accept") return { action: answer.action };
    const allowed = Object.keys((request.requestedSchema.properties as Record<string, unknown>) ?? {});
    return { action: "accept", content: Object.fromEntries(Object.entries(answer.content).filter(([key]) => allowed.includes(key))) };
  };
}
