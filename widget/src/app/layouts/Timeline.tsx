// The timeline layout: up to 12 steps in order, each marked done, current, upcoming or failed through
// the status column's `statuses` map (a value without a mapping shows as upcoming) and shown in words.
import type { ResultColumn } from "@caplo/shared";
import { useWidget } from "../context.ts";
import { cellText } from "../format.ts";
import { Cell, columnsOf, itemsOf, More, titleColumn, type Item, type ResultMessage } from "./common.tsx";

const MARK: Record<string, string> = { done: "✓", current: "●", upcoming: "○", failed: "✕" };

function stepState(status: ResultColumn | undefined, item: Item): string {
  const value = status ? cellText(item[status.key]) : "";
  return status?.statuses?.[value] ?? "upcoming";
}

export function Timeline({ result }: { result: ResultMessage }) {
  const { t } = useWidget();
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const status = columns.find((c) => c.role === "status");
  const title = titleColumn(columns.filter((c) => c !== status)) ?? status;
  const rest = columns.filter((c) => c !== status && c !== title);
  return (
    <>
      <ol class="timeline">
        {items.map((item, i) => {
          const state = stepState(status, item);
          return (
            <li class={`step step-${state}`} key={i} aria-current={state === "current" ? "step" : undefined}>
              <span class="mark" aria-hidden="true">
                {MARK[state]}
              </span>
              <div>
                {title && (
                  <strong>
                    <Cell column={title} item={item} />
                  </strong>
                )}
                {/* The step's state in words; the status column's raw enum value (in_progress) is for
                    the mapping, not for the customer. */}
                <span class="step-state"> {t.timelineStates[state]}</span>
                {rest.map((c) => (
                  <span class="item-field" key={c.key}>
                    <Cell column={c} item={item} />
                  </span>
                ))}
              </div>
            </li>
          );
        })}
      </ol>
      <More result={result} shown={items.length} />
    </>
  );
}
