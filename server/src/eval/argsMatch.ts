// How an evaluation compares a tool call's (or a proposal's) arguments with the ones a case expects:
// exactly (JSON equality, key order ignored), as a subset (the fixtures' partial matching: listed keys
// only, arrays item by item, $match and $any), or by pattern (every expected string is a regular
// expression the actual value, as text, must match). Each mismatch is named by its JSON pointer.
import type { EvalArgMatch } from "@caplo/shared";
import { matchPartial } from "../runner/fixtures.ts";

/** JSON text with object keys sorted: equal values give equal text. */
export function canonical(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]));
  }
  return value;
}

/** Every way `actual` differs from `expected` under `match`; empty means it matches. */
export function matchArgs(match: EvalArgMatch, expected: unknown, actual: unknown): string[] {
  if (match === "exact") return canonical(expected) === canonical(actual) ? [] : [`expected exactly ${canonical(expected)}, got ${canonical(actual)}`];
  if (match === "subset") return matchPartial(expected, actual);
  return matchPattern(expected, actual, "");
}

function matchPattern(expected: unknown, actual: unknown, path: string): string[] {
  const where = path || "/";
  if (typeof expected === "string") {
    if (actual === undefined || actual === null || typeof actual === "object") return [`${where}: expected a value matching /${expected}/, got ${JSON.stringify(actual)}`];
    return new RegExp(expected).test(String(actual)) ? [] : [`${where}: expected a value matching /${expected}/, got ${JSON.stringify(actual)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return [`${where}: expected ${expected.length} items, got ${JSON.stringify(actual)}`];
    return expected.flatMap((item, index) => matchPattern(item, actual[index], `${path}/${index}`));
  }
  if (expected && typeof expected === "object") {
    if (!actual || typeof actual !== "object" || Array.isArray(actual)) return [`${where}: expected an object, got ${JSON.stringify(actual)}`];
    return Object.entries(expected).flatMap(([key, value]) => matchPattern(value, (actual as Record<string, unknown>)[key], `${path}/${key}`));
  }
  return Object.is(expected, actual) ? [] : [`${where}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`];
}
