// The choices layout: up to 10 tappable items; tapping one sends the reply action's template with
// {name} filled from that item as the visitor's message. A set of choices is answered once.
import { useRef } from "preact/hooks";
import { useWidget } from "../context.ts";
import { fillTemplate } from "../format.ts";
import { actionsOf, cellPlain, columnsOf, itemsOf, More, titleColumn, type ResultMessage } from "./common.tsx";

export function Choices({ result }: { result: ResultMessage }) {
  const { act, used, connected, t } = useWidget();
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const reply = actionsOf(result)[0];
  const title = titleColumn(columns);
  const subtitle = columns.find((c) => c.role === "subtitle" || c.role === "description");
  const id = `choices:${result.id}`;
  const chosen = used[id];
  const picked = useRef(false);
  return (
    <>
      <div class="choices" role="group" aria-label={result.title}>
        {items.map((item, i) => {
          const text = reply?.template ? fillTemplate(reply.template, item) : cellPlain(title, item);
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
