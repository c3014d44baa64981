// The choices layout: up to 10 tappable items; tapping one sends the reply action's template with
// {name} filled from that item as the visitor's message. A set of choices is answered once.
import { useRef } from "preact/hooks";
import { useWidget } from "../context.ts";
import { fillTemplate } from "../format.ts";
import { actionsOf, cellPlain, columnsOf, itemsOf, More, titleColumn, type Item, type ResultMessage } from "./common.tsx";

/** The message tapping item `item` of a choices result sends: the reply action's template filled, else its title. */
function replyText(result: ResultMessage, item: Item): string {
  const reply = actionsOf(result)[0];
  return reply?.template ? fillTemplate(reply.template, item) : cellPlain(titleColumn(columnsOf(result)), item);
}

/**
 * The label of every choice the conversation offered, by the message its tap sends: the visitor's message
 * shows "Sat 5 Dec, 15:00, fitting", not "Book slot SL-ST-LJ1-…", also in a history from the server (a new
 * tab), where what this page tapped is not known.
 */
export function choiceLabels(messages: readonly { type: string }[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of messages) {
    if (m.type !== "result" || (m as ResultMessage).layout !== "choices") continue;
    const result = m as ResultMessage;
    const title = titleColumn(columnsOf(result));
    for (const item of itemsOf(result)) {
      const text = replyText(result, item);
      if (text) labels[text] = cellPlain(title, item);
    }
  }
  return labels;
}

export function Choices({ result }: { result: ResultMessage }) {
  const { act, used, connected, t } = useWidget();
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const title = titleColumn(columns);
  const subtitle = columns.find((c) => c.role === "subtitle" || c.role === "description");
  const id = `choices:${result.id}`;
  const chosen = used[id];
  const picked = useRef(false);
  return (
    <>
      <div class="choices" role="group" aria-label={result.title}>
        {items.map((item, i) => {
          const text = replyText(result, item);
          const isChosen = chosen === String(i);
          return (
            <button
              type="button"
              key={i}
              class={isChosen ? "chosen" : undefined}
              aria-pressed={chosen !== undefined ? isChosen : undefined}
              disabled={chosen !== undefined || !connected || !text}
              onClick={() => {
                if (picked.current) return;
                picked.current = true;
                if (!act(id, String(i), { type: "message", text }, cellPlain(title, item))) picked.current = false;
              }}
            >
              <span>{cellPlain(title, item)}</span>
              {subtitle && <span class="muted">{cellPlain(subtitle, item)}</span>}
              {isChosen && <span class="sr-only"> ({t.chosen})</span>}
            </button>
          );
        })}
      </div>
      <More result={result} shown={items.length} />
    </>
  );
}
