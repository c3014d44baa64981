// The conversation as a plain-text transcript the visitor can download: who said what and when, cards as
// their title, fields and where they stand, results as their title and items. Only what the visitor saw.
import type { Entry } from "./conversation.ts";
import type { Strings } from "./i18n.ts";

const when = (at: string, locale: string) => {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleString(locale, { dateStyle: "short", timeStyle: "short" });
};

export function transcriptText(entries: Entry[], t: Strings, locale: string, labels: Record<string, string>, stateLabel: (state: string) => string): string {
  const lines: string[] = [];
  for (const { at, message: m } of entries) {
    const head = `[${when(at, locale)}]`;
    switch (m.type) {
      case "text": {
        const who = { customer: t.you, agent: t.agent, team: t.team, system: t.system }[m.from];
        lines.push(`${head} ${who}: ${m.from === "customer" ? (labels[m.text] ?? m.text) : m.text}`);
        break;
      }
      case "review":
        if (m.state !== "proposed") break; // later states of a card are its outcomes
        lines.push(`${head} ${t.agent}: ${m.title}`, ...m.fields.map((f) => `    ${f.label}: ${f.display === "last4" ? `•••• ${f.value.slice(-4)}` : (f.options?.find((o) => o.value === f.value)?.label ?? f.value)}`));
        break;
      case "outcome":
        lines.push(`${head} ${stateLabel(m.state)}${m.state === "not_applied" ? `: ${m.message}` : ""}`, ...(m.receipt ?? []).map((f) => `    ${f.label}: ${f.value}`));
        break;
      case "result":
        lines.push(`${head} ${t.agent}: ${m.title}`, ...m.items.map((item) => `    - ${m.columns.map((c) => item[c.key]).filter((v) => v !== null && v !== undefined && v !== "").join(", ")}`));
        break;
      case "file":
        lines.push(`${head} ${t.agent}: ${m.name}`);
        break;
      case "handoff":
      case "step_up":
        lines.push(`${head} ${m.text}`);
        break;
      case "question":
        lines.push(`${head} ${t.agent}: ${m.message}`);
        break;
      default:
        break;
    }
  }
  return `${lines.join("\n")}\n`;
}
