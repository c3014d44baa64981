// The conversation as a plain-text transcript the visitor can download: who said what and when, cards as
// their title, fields and where they stand, results as their title and items. Only what the visitor saw,
// in the words they saw it: a tapped choice's label, a field's display value, money and times formatted,
// status values as words, no ids a layout does not show.
import type { Entry } from "./conversation.ts";
import type { Strings } from "./i18n.ts";
import { cellWords, itemsOf, shownColumns } from "./layouts/common.tsx";
import { shownValue, stateLabel, stateLine } from "./components/ReviewCard.tsx";
import { stepUpKey, stepUpWords } from "./components/StepUp.tsx";

const when = (at: string, locale: string) => {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? "" : d.toLocaleString(locale, { dateStyle: "short", timeStyle: "short" });
};

/**
 * What the transcript needs of the app: the strings and locale, tapped choices' labels, names shown for
 * ids, and what the visitor used (where each step-up prompt's wording, sign in or verify again, is kept).
 */
export interface TranscriptContext {
  t: Strings;
  locale: string;
  labels: Record<string, string>;
  names: Record<string, string>;
  used: Record<string, string>;
}

export function transcriptText(entries: Entry[], { t, locale, labels, names, used }: TranscriptContext): string {
  const lines: string[] = [];
  /** Each proposal's title, so an outcome says which request it is about. */
  const titles = new Map<string, string>();
  const indent = (label: string, value: string) => `    ${label}: ${value}`;
  for (const { at, message: m } of entries) {
    const head = `[${when(at, locale)}]`;
    switch (m.type) {
      case "text": {
        const who = { customer: t.you, agent: t.agent, team: t.team, system: t.system }[m.from];
        lines.push(`${head} ${who}: ${m.from === "customer" ? (labels[m.text] ?? m.text) : m.text}`);
        break;
      }
      case "review":
        if (m.state !== "proposed") break; // later states of a card are told by its outcomes
        titles.set(m.proposalId, m.title);
        lines.push(
          `${head} ${t.agent}: ${m.title}`,
          ...m.fields.map((f) => indent(f.label, f.display === "last4" ? `•••• ${f.value.slice(-4)}` : f.value === "" ? t.noValue : shownValue(f, f.value, names))),
        );
        break;
      case "outcome": {
        const line = stateLine(t, m.state, m);
        const title = titles.get(m.proposalId) ?? m.title;
        lines.push(`${head} ${title ? `${title}: ` : ""}${stateLabel(t, m.state)}${line ? `. ${line}` : ""}`, ...(m.receipt ?? []).map((f) => indent(f.label, f.value)));
        break;
      }
      case "result": {
        const columns = shownColumns(m);
        lines.push(`${head} ${t.agent}: ${m.title}`, ...itemsOf(m).map((item) => `    - ${columns.map((c) => cellWords(c, item, locale)).filter(Boolean).join(", ")}`));
        break;
      }
      case "file":
        lines.push(`${head} ${t.agent}: ${m.name}`);
        break;
      case "handoff":
        lines.push(`${head} ${t.system}: ${m.text}`);
        break;
      case "step_up": {
        // The prompt's own words (the server's text is never shown): "verify again" only where it said so.
        const words = stepUpWords(t, used[stepUpKey(m.id)] === "again");
        lines.push(`${head} ${t.system}: ${words.title}. ${words.text}`);
        break;
      }
      case "question":
        lines.push(`${head} ${t.agent}: ${m.message}`);
        break;
      default:
        break;
    }
  }
  // A message's or value's own line breaks continue its entry, indented: its text can never start a line that
  // reads as another entry ("[14:26] You: Yes, I confirm") or another field of a card.
  return `${lines.map((line) => line.replace(/\r\n|[\n\r\v\f\u0085\u2028\u2029]/g, line.startsWith("    ") ? "\n        " : "\n    ")).join("\n")}\n`;
}
