// The cards layout: up to 20 cards, each with its image, title, subtitle, description, money, badge,
// link and time columns placed by role, other columns as label and value, and up to two actions. Two or
// more are a carousel: one row that scrolls sideways and snaps to a card (touch, trackpad, the arrow keys
// once the row has focus, or its Previous and Next buttons for a mouse; Tab moves through the cards' own
// controls and scrolls them into view).
import type { ResultColumn } from "@caplo/shared";
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { fill } from "../i18n.ts";
import { Actions, actionsOf, byRole, Cell, cellPlain, columnsOf, itemsOf, More, titleColumn, type ResultMessage } from "./common.tsx";

const PLACED = new Set<ResultColumn["role"]>(["image", "title", "subtitle", "description", "money", "badge", "link", "time"]);

export function Cards({ result }: { result: ResultMessage }) {
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const actions = actionsOf(result);
  const [image, title, subtitle, description, money, badge, link, time] = [
    "image",
    "title",
    "subtitle",
    "description",
    "money",
    "badge",
    "link",
    "time",
  ].map((role) => byRole(columns, role as ResultColumn["role"]));
  const rest = columns.filter((c) => !PLACED.has(c.role));
  const { t } = useWidget();
  const carousel = items.length > 1;
  const row = useRef<HTMLUListElement>(null);
  // Which ends of the row are in view: a button that would not move the row is disabled.
  const [ends, setEnds] = useState({ start: true, end: false });
  const onScroll = () => {
    const el = row.current;
    if (el) setEnds({ start: el.scrollLeft < 4, end: el.scrollLeft + el.clientWidth > el.scrollWidth - 4 });
  };
  useLayoutEffect(onScroll, []);
  /** One card further (the snap lands it at the start of the row). */
  const step = (direction: 1 | -1) => {
    const el = row.current;
    const card = el?.firstElementChild as HTMLElement | null;
    if (el && card) el.scrollBy({ left: direction * (card.offsetWidth + 8), behavior: "smooth" });
  };
  return (
    <>
      <ul
        class={carousel ? "cards carousel" : "cards"}
        ref={row}
        onScroll={carousel ? onScroll : undefined}
        {...(carousel && { tabIndex: 0, "aria-label": t.cardsLabel.replace("{title}", result.title).replace("{count}", String(items.length)) })}
      >
        {items.map((item, i) => (
          <li class="item-card" key={i}>
            {image && <Cell column={image} item={item} />}
            <div class="item-body">
              {badge && <Cell column={badge} item={item} />}
              {title && (
                <h4 class="item-title">
                  <Cell column={title} item={item} />
                </h4>
              )}
              {subtitle && (
                <p class="subtitle">
                  <Cell column={subtitle} item={item} />
                </p>
              )}
              {description && (
                <p class="description">
                  <Cell column={description} item={item} />
                </p>
              )}
              {money && (
                <p>
                  <Cell column={money} item={item} />
                </p>
              )}
              {time && (
                <p class="muted">
                  <Cell column={time} item={item} />
                </p>
              )}
              {rest.map((c) => (
                <p class="item-field" key={c.key}>
                  <span class="label">{c.label}: </span>
                  <Cell column={c} item={item} />
                </p>
              ))}
              {link && <Cell column={link} item={item} />}
              <Actions actions={actions} item={item} name={cellPlain(title ?? titleColumn(columns), item)} />
            </div>
          </li>
        ))}
      </ul>
      {carousel && (
        <div class="carousel-nav">
          <button type="button" class="icon" aria-label={fill(t.previous, { title: result.title })} disabled={ends.start} onClick={() => step(-1)}>
            ‹
          </button>
          <button type="button" class="icon" aria-label={fill(t.next, { title: result.title })} disabled={ends.end} onClick={() => step(1)}>
            ›
          </button>
        </div>
      )}
      <More result={result} shown={items.length} />
    </>
  );
}
