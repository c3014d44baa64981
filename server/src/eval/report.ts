// An evaluation's reports: the progress line per finished run and the terminal table (pass rate, runs,
// steps, tokens and time per case, then the failures), the JSON report, and JUnit XML for CI (one
// testcase per case, its repeats counted in the testcase's properties; every text escaped).
import type { EvalProgress, EvalResult } from "./evalSuite.ts";

/**
 * Terminal text: control characters (a model's reply may hold ANSI escape sequences) shown as \u escapes,
 * so nothing a model or a cases file says can move the cursor or recolour the user's terminal.
 */
// eslint-disable-next-line no-control-regex
export const terminalText = (text: string) => text.replace(/[\x00-\x1f\x7f-\x9f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
const percent = (rate: number) => `${(rate * 100).toFixed(rate === 1 || rate === 0 ? 0 : 1)}%`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const tokens = (count: number | null) => (count === null ? "–" : String(count));

/** One line as a run finishes: `[ 3/12] ✓ cancel a processing order (run 1/3, 4 steps, 812 ms)`. */
export function progressLine(progress: EvalProgress): string {
  const width = String(progress.total).length;
  const mark = progress.result.passed ? "✓" : "✗";
  const detail = `run ${progress.run}/${progress.runs}, ${progress.result.steps} step${progress.result.steps === 1 ? "" : "s"}${progress.result.tokens !== null ? `, ${progress.result.tokens} tokens` : ""}, ${Math.round(progress.result.ms)} ms`;
  return `[${String(progress.done).padStart(width)}/${progress.total}] ${mark} ${terminalText(progress.caseName)} (${detail})`;
}

/** The terminal table, then each failing run's problems, then the verdict. */
export function tableReport(result: EvalResult): string {
  const header = ["case", "pass", "runs", "steps", "tokens", "time"];
  const rows = result.cases.map((entry) => [`${entry.ok ? "✓" : "✗"} ${terminalText(entry.name)}`, percent(entry.passRate), `${entry.passed}/${entry.runs}`, String(entry.steps), tokens(entry.tokens), seconds(entry.ms)]);
  const total = ["overall", percent(result.passRate), `${result.passed}/${result.runs}`, String(result.cases.reduce((sum, entry) => sum + entry.steps, 0)), tokens(result.tokens), seconds(result.ms)];
  const all = [header, ...rows, total];
  const widths = header.map((_, column) => Math.max(...all.map((row) => [...row[column]!].length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ").trimEnd();
  const rule = widths.map((width) => "─".repeat(width)).join("  ");
  const out = [`${result.agent}: ${result.release}`, `model ${result.model}; writes proposed, never run`, "", line(header), rule, ...rows.map(line), rule, line(total)];
  const failing = result.cases.filter((entry) => entry.failures.length > 0);
  if (failing.length > 0) out.push("", "Failures:");
  for (const entry of failing) {
    for (const failure of entry.failures) {
      out.push(`  ${terminalText(entry.name)} (run ${failure.run}):`);
      for (const problem of failure.problems) out.push(`    - ${terminalText(problem)}`);
    }
  }
  for (const refusal of result.refused) out.push(`  refused by the read-only runner: ${refusal}`);
  const under = result.cases.filter((entry) => !entry.ok).map((entry) => entry.name);
  out.push(
    "",
    result.ok
      ? `PASS: every case passed at least ${percent(result.minPass)} of its runs (overall ${percent(result.passRate)})`
      : `FAIL: ${under.length > 0 ? `${under.length} case${under.length === 1 ? "" : "s"} under ${percent(result.minPass)}: ${terminalText(under.join(", "))}` : "a write or status check reached the read-only runner"}`,
  );
  return out.join("\n");
}

/** The JSON report (a stable, documented shape: docs/evaluations.md). */
export function jsonReport(result: EvalResult): string {
  return `${JSON.stringify(
    {
      ok: result.ok,
      agent: result.agent,
      release: result.release,
      model: result.model,
      minPass: result.minPass,
      passRate: result.passRate,
      runs: result.runs,
      passed: result.passed,
      tokens: result.tokens,
      ms: Math.round(result.ms),
      refused: result.refused,
      cases: result.cases.map((entry) => ({ ...entry, ms: Math.round(entry.ms) })),
    },
    null,
    2,
  )}\n`;
}

/** Text for XML: the five special characters escaped, and characters XML 1.0 cannot hold removed. */
export function xmlText(text: string): string {
  return text
    .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

/**
 * JUnit XML: one testsuite for the release, one testcase per case. A case under the threshold is a
 * failure whose message gives its pass rate and whose text lists each failing run's problems; its
 * runs, passes and tokens are properties of the testcase.
 */
export function junitReport(result: EvalResult): string {
  const attr = (name: string, value: string | number) => ` ${name}="${xmlText(String(value))}"`;
  const failures = result.cases.filter((entry) => !entry.ok).length;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites${attr("name", `caplo eval ${result.agent}`)}${attr("tests", result.cases.length)}${attr("failures", failures)}${attr("errors", 0)}${attr("time", (result.ms / 1000).toFixed(3))}>`,
    `  <testsuite${attr("name", result.release)}${attr("tests", result.cases.length)}${attr("failures", failures)}${attr("errors", 0)}${attr("skipped", 0)}${attr("time", (result.ms / 1000).toFixed(3))}>`,
    "    <properties>",
    `      <property${attr("name", "model")}${attr("value", result.model)}/>`,
    `      <property${attr("name", "minPass")}${attr("value", result.minPass)}/>`,
    `      <property${attr("name", "passRate")}${attr("value", result.passRate)}/>`,
    "    </properties>",
  ];
  for (const entry of result.cases) {
    lines.push(`    <testcase${attr("name", entry.name)}${attr("classname", result.agent)}${attr("time", (entry.ms / 1000).toFixed(3))}>`);
    lines.push("      <properties>");
    for (const [name, value] of [["runs", entry.runs], ["passed", entry.passed], ["passRate", entry.passRate], ["steps", entry.steps], ["tokens", tokens(entry.tokens)]] as const) {
      lines.push(`        <property${attr("name", name)}${attr("value", value)}/>`);
    }
    lines.push("      </properties>");
    if (!entry.ok) {
      const body = entry.failures.flatMap((failure) => [`run ${failure.run}:`, ...failure.problems.map((problem) => `  - ${problem}`)]).join("\n");
      lines.push(`      <failure${attr("message", `passed ${entry.passed} of ${entry.runs} runs (${percent(entry.passRate)}), under ${percent(result.minPass)}`)}${attr("type", "eval_under_threshold")}>${xmlText(body)}</failure>`);
    }
    lines.push("    </testcase>");
  }
  lines.push("  </testsuite>", "</testsuites>", "");
  return lines.join("\n");
}
