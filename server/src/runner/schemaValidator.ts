// Validates tool arguments and results against the tool's JSON Schemas (draft-07 or 2020-12, as the
// schema says), with errors located by JSON pointer so the model can correct the argument it got wrong.
import { createRequire } from "node:module";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import type { ErrorObject, ValidateFunction } from "ajv";

type AjvInstance = {
  compile: (schema: object) => ValidateFunction;
  /** The schemas and references the instance holds by id (a compiled schema's $id and nested $ids). */
  schemas: Record<string, unknown>;
  refs: Record<string, unknown>;
};
type AjvConstructor = new (options: Record<string, unknown>) => AjvInstance;

const require = createRequire(import.meta.url);
const Ajv07 = (require("ajv") as { default: AjvConstructor }).default;
const Ajv2020 = (require("ajv/dist/2020") as { default: AjvConstructor }).default;
const addFormats = (require("ajv-formats") as { default: (ajv: AjvInstance) => void }).default;

export type SchemaIssue = { code: string; path: string; message: string };

/**
 * The time one validation may spend testing `pattern` and `patternProperties` regexes, all together. A
 * schema's pattern is the schema author's (a remote MCP server's, for one), and JavaScript regexes
 * backtrack: `^([a-z0-9]+-?)+$` looks harmless and takes minutes on forty letters and a `!`. Patterns
 * are therefore tested in a worker thread, the server's thread waiting for the answer at most this long;
 * a pattern still running then is stopped (its worker ended) and the value is refused.
 */
export const PATTERN_BUDGET_MS = 500;
/** How long a new pattern worker may take to start (not counted in the budget). */
const PATTERN_WORKER_START_MS = 10_000;

/** Thrown out of a validation whose patterns ran past the budget; validateAgainst reports it by code. */
class PatternTimeout extends Error {}

// The worker keeps each pattern compiled (with the same flags ajv asks for: `u`) and answers on its port;
// the signal tells the waiting thread an answer is there.
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { port, signal } = workerData;
const compiled = new Map();
const answer = (message) => { port.postMessage(message); Atomics.store(signal, 0, 1); Atomics.notify(signal, 0); };
port.on("message", ({ pattern, flags, text }) => {
  try {
    const key = flags + "/" + pattern;
    let regExp = compiled.get(key);
    if (!regExp) {
      if (compiled.size >= 1000) compiled.clear();
      regExp = new RegExp(pattern, flags);
      compiled.set(key, regExp);
    }
    answer({ matched: regExp.test(text) });
  } catch (error) {
    answer({ error: String(error && error.message || error) });
  }
});
answer({ ready: true });
`;

type PatternWorker = { worker: Worker; port: MessagePort; signal: Int32Array; ready: boolean };
let patternWorker: PatternWorker | undefined;
/** Pattern time left in the validation running now. */
let budgetLeftMs = PATTERN_BUDGET_MS;

/** Waits for the worker's next answer at most `ms`; undefined when none came in time. */
function awaitAnswer(current: PatternWorker, ms: number): Record<string, unknown> | undefined {
  Atomics.wait(current.signal, 0, 0, ms);
  const received = receiveMessageOnPort(current.port);
  return received?.message as Record<string, unknown> | undefined;
}

/** Starts a worker; it is waited for when first used (a stopped one's successor starts at once). */
function startWorker(): PatternWorker {
  const { port1, port2 } = new MessageChannel();
  const signal = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { port: port2, signal }, transferList: [port2] });
  worker.unref();
  port1.unref();
  return { worker, port: port1, signal, ready: false };
}

function stopWorker(current: PatternWorker): void {
  if (patternWorker === current) patternWorker = undefined;
  current.port.close();
  void current.worker.terminate().catch(() => undefined);
}

/** Tests a pattern in the worker, within what is left of the validation's budget. */
function testPattern(pattern: string, flags: string, text: string): boolean {
  if (budgetLeftMs <= 0) throw new PatternTimeout(`the schema's patterns took over ${PATTERN_BUDGET_MS} ms to check`);
  const current = (patternWorker ??= startWorker());
  if (!current.ready) {
    if (!awaitAnswer(current, PATTERN_WORKER_START_MS)?.ready) {
      stopWorker(current);
      throw new PatternTimeout("the pattern checker did not start");
    }
    current.ready = true;
  }
  Atomics.store(current.signal, 0, 0);
  const started = performance.now();
  current.port.postMessage({ pattern, flags, text });
  const answer = awaitAnswer(current, budgetLeftMs);
  budgetLeftMs -= performance.now() - started;
  if (!answer) {
    // Still backtracking: the worker is ended (a new one serves the next check).
    stopWorker(current);
    patternWorker = startWorker();
    throw new PatternTimeout(`the schema's patterns took over ${PATTERN_BUDGET_MS} ms to check`);
  }
  if (typeof answer.error === "string") throw new Error(answer.error);
  return answer.matched === true;
}

/**
 * The backtracking a pattern may do on the server's own thread: a text is tested there when (n + 1)^(q + 1)
 * stays under this, for a text of n characters and a pattern of q variable repetitions that repeats no group
 * and refers back to none (so it backtracks at most polynomially: each repetition picks how far it reaches,
 * from each start). `^SO-[0-9]{4}$` (q = 0) is tested there on any text under 100,000 characters,
 * `^[a-z0-9_]+$` (q = 1) up to 315; everything else goes to the worker. A hop to the worker costs some
 * 30 µs of CPU (bench/README), against under 1 µs here.
 */
const INLINE_STEPS_MAX = 100_000;

/**
 * How many variable repetitions (`*`, `+`, `?`, `{m,}`, `{m,n}` with n > m) a pattern holds, or undefined
 * when it repeats a group or refers back to one (those can backtrack exponentially on a short text).
 * Read as the `u` flag reads it; anything it cannot be sure of counts as undefined.
 */
export function patternRepetitions(pattern: string): number | undefined {
  let count = 0;
  // What came before: a group's opening, its closing, a repetition, or anything else.
  let previous: "open" | "close" | "repetition" | "atom" = "atom";
  for (let at = 0; at < pattern.length; at++) {
    const char = pattern[at]!;
    if (char === "\\") {
      const next = pattern[at + 1];
      if (next === undefined) return undefined;
      if (/[1-9]/.test(next) || next === "k") return undefined; // a backreference
      at++;
      if ((next === "p" || next === "P" || next === "u") && pattern[at + 1] === "{") {
        const close = pattern.indexOf("}", at + 1);
        if (close < 0) return undefined;
        at = close;
      }
      previous = "atom";
      continue;
    }
    if (char === "[") {
      // A class is one atom: skip to its end (escapes inside included).
      let end = at + 1;
      while (end < pattern.length && pattern[end] !== "]") end += pattern[end] === "\\" ? 2 : 1;
      if (end >= pattern.length) return undefined;
      at = end;
      previous = "atom";
      continue;
    }
    if (char === "(") {
      previous = "open";
      continue;
    }
    if (char === ")") {
      previous = "close";
      continue;
    }
    if (char === "*" || char === "+" || char === "?" || char === "{") {
      if (char === "?" && (previous === "open" || previous === "repetition")) {
        previous = "atom"; // a group's kind (?: ?= ?<name>), or a lazy repetition
        continue;
      }
      let variable = true;
      if (char === "{") {
        const bounds = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(at));
        if (!bounds) return undefined;
        variable = bounds[2] !== undefined && (bounds[3] === "" || Number(bounds[3]) > Number(bounds[1]));
        at += bounds[0].length - 1;
      }
      if (previous === "close") return undefined; // a repeated group
      if (variable) count++;
      previous = "repetition";
      continue;
    }
    previous = "atom";
  }
  return count;
}

/** ajv's code.regExp: the pattern is checked here (a bad one fails the compile), tested on this thread when its backtracking is bounded small for the text (INLINE_STEPS_MAX), else in the worker. */
function patternRegExp(pattern: string, flags: string): { test: (text: string) => boolean; toString: () => string } {
  const regExp = new RegExp(pattern, flags);
  const repetitions = patternRepetitions(pattern);
  // The longest text tested here: (n + 1)^(q + 1) <= INLINE_STEPS_MAX.
  const inlineMax = repetitions === undefined ? -1 : Math.floor(INLINE_STEPS_MAX ** (1 / (repetitions + 1))) - 1;
  return {
    // ajv keeps one compiled pattern per toString() in its instance, for every schema it compiles: a RegExp's
    // own spelling, so two patterns never share (Object's "[object Object]" made every pattern the first).
    toString: () => regExp.toString(),
    test: (value: string) => {
      const text = String(value);
      if (text.length <= inlineMax) {
        patternChecks.inline++;
        return regExp.test(text);
      }
      patternChecks.worker++;
      return testPattern(pattern, flags, text);
    },
  };
}

/** How many pattern tests ran on this thread and in the worker (for tests). */
export const patternChecks = { inline: 0, worker: 0 };
patternRegExp.code = "caplo pattern worker";

const options = { allErrors: true, strict: false, validateFormats: true, code: { regExp: patternRegExp } };
const draft07 = new Ajv07(options);
const draft2020 = new Ajv2020(options);
addFormats(draft07);
addFormats(draft2020);

const cache = new Map<string, ValidateFunction>();

/**
 * Compiles a schema without leaving it in the instance: every tool's schemas, of every workspace, compile
 * in the same two instances, and ajv keeps each schema's `$id` (and nested ones) there. A second schema
 * with an $id already held could not compile at all (a remote server listing one with another tool's $id
 * broke that tool's every call, for the life of the process), and a `$ref` to an absolute URI resolved to
 * whichever tool's schema had claimed it. The ids a compile added are removed again, so a schema sees
 * only itself and the meta-schemas.
 */
function compileAlone(dialect: AjvInstance, schema: object): ValidateFunction {
  const schemas = new Set(Object.keys(dialect.schemas));
  const refs = new Set(Object.keys(dialect.refs));
  try {
    return dialect.compile(schema);
  } finally {
    for (const id of Object.keys(dialect.schemas)) if (!schemas.has(id)) delete dialect.schemas[id];
    for (const id of Object.keys(dialect.refs)) if (!refs.has(id)) delete dialect.refs[id];
  }
}

/**
 * The validator of a schema object already seen, without spelling it out again: a tool's schemas are the same
 * objects call after call (its listing's), and the text key below cost a JSON.stringify of the whole schema
 * each time. A schema object is never changed once a tool is listed; an equal schema in another object finds
 * the same validator by its text.
 */
const bySchema = new WeakMap<object, ValidateFunction>();

function compile(schema: Record<string, unknown>): ValidateFunction {
  const seen = bySchema.get(schema);
  if (seen) return seen;
  const key = JSON.stringify(schema);
  let validate = cache.get(key);
  if (!validate) {
    const dialect = typeof schema.$schema === "string" && schema.$schema.includes("2020-12") ? draft2020 : draft07;
    const { $schema: _ignored, ...rest } = schema;
    validate = compileAlone(dialect, dialect === draft2020 ? schema : rest);
    cache.set(key, validate);
  }
  bySchema.set(schema, validate);
  return validate;
}

function describe(error: ErrorObject): SchemaIssue {
  const params = error.params as Record<string, unknown>;
  let path = error.instancePath || "/";
  if (error.keyword === "required" && typeof params.missingProperty === "string") {
    path = `${error.instancePath}/${params.missingProperty}`;
    return { code: "required", path, message: `${path} is required` };
  }
  if (error.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
    path = `${error.instancePath}/${params.additionalProperty}`;
    return { code: "additional_property", path, message: `${path} is not allowed` };
  }
  return { code: error.keyword, path, message: `${path} ${error.message ?? "is invalid"}` };
}

/** Validates `value` against `schema`; an empty list means valid. */
export function validateAgainst(schema: Record<string, unknown>, value: unknown): SchemaIssue[] {
  let validate: ValidateFunction;
  try {
    validate = compile(schema);
  } catch (error) {
    return [{ code: "schema_invalid", path: "/", message: `the tool's schema cannot be compiled: ${(error as Error).message}` }];
  }
  budgetLeftMs = PATTERN_BUDGET_MS;
  try {
    if (validate(value)) return [];
  } catch (error) {
    if (error instanceof PatternTimeout) return [{ code: "pattern_timeout", path: "/", message: `the value could not be checked: ${error.message}, so it is refused` }];
    throw error;
  }
  return (validate.errors ?? []).map(describe);
}
