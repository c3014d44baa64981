// What every result layout shares: the seed's item, column and action limits, a cell rendered by its
// column role (image and link only for https URLs, money in its currency, time for the locale), and
// item actions (a reply sends the template with {name} filled; a link opens a page; neither calls a tool).
import type { OutboundOf, ResultAction, ResultColumn } from "@caplo/shared";
import {
  ACTION_LAYOUTS,
  ACTIONS_MAX,
  COLUMNS_MAX,
  COLUMNS_MAX_WIDE,
  LAYOUT_ITEMS_MAX,
  WIDE_COLUMN_LAYOUTS,
} from "@caplo/shared/limits";
import { useWidget } from "../context.ts";
import { cellText, clampText, fillTemplate, formatMoney, formatTime, safeUrl, type Primitive } from "../format.ts";
import { Masked } from "../components/Receipt.tsx";

export type ResultMessage = OutboundOf<"result">;
export type Item = Record<string, Primitive>;
export type Layout = ResultMessage["layout"];

/** The items a layout shows: up to 20 for list, table, cards and map, 10 choices, 4 compared, 12 steps, 1 detail or page. */
export function itemsOf(result: ResultMessage): Item[] {
  return result.items.slice(0, LAYOUT_ITEMS_MAX[result.layout] ?? 0);
}

/** Columns: at most 6, or 12 for a detail, comparison or map. */
export function columnsOf(result: ResultMessage): ResultColumn[] {
  const wide = (WIDE_COLUMN_LAYOUTS as readonly string[]).includes(result.layout);
  return result.columns.slice(0, wide ? COLUMNS_MAX_WIDE : COLUMNS_MAX);
}

/** Item actions: up to two on cards, a detail, a comparison or a map; exactly one reply on choices. */
export function actionsOf(result: ResultMessage): ResultAction[] {
  if (!(ACTION_LAYOUTS as readonly string[]).includes(result.layout)) return [];
  const actions = result.actions ?? [];
  if (result.layout === "choices") return actions.filter((a) => a.kind === "reply").slice(0, 1);
  return actions.slice(0, ACTIONS_MAX);
}

export const byRole = (columns: ResultColumn[], role: ResultColumn["role"]) => columns.find((c) => c.role === role);

/** The column an item is named by: its title role, else the first column. */
export const titleColumn = (columns: ResultColumn[]) => byRole(columns, "title") ?? columns[0];

/** The currency of a money column for this item: a fixed code, or the sibling property named by key. */
function currencyOf(column: ResultColumn, item: Item): string | undefined {
  if (column.currency?.code) return column.currency.code;
  const key = column.currency?.key;
  const value = key ? item[key] : undefined;
  return typeof value === "string" ? value : undefined;
}

/** One cell as its column role says; anything that is not safe to show as such is shown as text. */
export function Cell({ column, item }: { column: ResultColumn; item: Item }) {
  const { t, locale } = useWidget();
  const value = item[column.key];
  if (value === undefined || value === null || value === "") return null;
  if (column.display === "last4") return <Masked value={cellText(value)} t={t} />;
  switch (column.role) {
    case "image": {
      const src = safeUrl(value);
      return src ? <img src={src} alt="" loading="lazy" referrerpolicy="no-referrer" /> : null;
    }
    case "link": {
      const href = safeUrl(value);
      return href ? (
        <a href={href} target="_blank" rel="noopener noreferrer nofollow">
          {clampText(column.label, 200)}
          <span class="sr-only"> {t.newTab}</span>
        </a>
      ) : (
        <span>{clampText(cellText(value), 200)}</span>
      );
    }
    case "money":
      return <span class="money">{formatMoney(value, currencyOf(column, item), locale)}</span>;
    case "time": {
      const text = formatTime(value, locale);
      return typeof value === "string" ? <time dateTime={value}>{text}</time> : <span>{text}</span>;
    }
    case "badge":
      return <span class="badge">{clampText(enumWords(cellText(value)), 80)}</span>;
    case "status": {
      const state = typeof value === "string" ? column.statuses?.[value] : undefined;
      return (
        <span class={`status-text${state ? ` step-${state}` : ""}`}>
          {clampText(enumWords(cellText(value)), 200)}
          {state && <span class="sr-only"> ({t.timelineStates[state]})</span>}
        </span>
      );
    }
    default:
      return <span>{clampText(cellText(value))}</span>;
  }
}

/** An enum value as words: "in_progress" reads "In progress" (a value with spaces or capitals is left as written). */
export function enumWords(value: string): string {
  if (!/^[a-z0-9]+(?:[_-][a-z0-9]+)*$/.test(value)) return value;
  const words = value.replace(/[_-]+/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The plain text of a cell, for names and labels. */
export function cellPlain(column: ResultColumn | undefined, item: Item): string {
  if (!column) return "";
  const text = cellText(item[column.key]);
  return column.display === "last4" ? `•••• ${text.slice(-4)}` : clampText(text, 300);
}

/** A cell as plain words, as the layout shows it (money in its currency, a time for the locale, an enum value as words, a masked number), for the transcript. */
export function cellWords(column: ResultColumn, item: Item, locale: string): string {
  const value = item[column.key];
  if (value === undefined || value === null || value === "") return "";
  if (column.display === "last4") return `•••• ${cellText(value).slice(-4)}`;
  switch (column.role) {
    case "image":
      return "";
    case "link": {
      const href = safeUrl(value);
      return href ? `${column.label}: ${href}` : cellText(value);
    }
    case "money":
      return formatMoney(value, currencyOf(column, item), locale);
    case "time":
      return formatTime(value, locale);
    case "badge":
    case "status":
      return enumWords(cellText(value));
    default:
      return cellText(value);
  }
}

/** The columns a layout shows as text: a choice its title and subtitle (not the ids its reply carries), a map no coordinates, no layout an image. */
export function shownColumns(result: ResultMessage): ResultColumn[] {
  const columns = columnsOf(result).filter((c) => c.role !== "image" && c.role !== "latitude" && c.role !== "longitude");
  if (result.layout === "page") return [];
  if (result.layout !== "choices") return columns;
  const subtitle = columns.find((c) => c.role === "subtitle" || c.role === "description");
  return [titleColumn(columns), subtitle].filter((c): c is ResultColumn => c !== undefined);
}

/** An item's controls: a reply sends the filled template as the visitor's message, a link opens its https URL. */
export function Actions({ actions, item, name }: { actions: ResultAction[]; item: Item; name?: string }) {
  const { say, connected, t } = useWidget();
  // Every item has the same buttons: each is named with its item ("Book here: Caplo Shop Maribor").
  const named = (label: string) => (name ? `${clampText(label, 40)}: ${name}` : undefined);
  if (actions.length === 0) return null;
  return (
    <div class="item-actions">
      {actions.map((action, i) => {
        if (action.kind === "reply") {
          const text = action.template ? fillTemplate(action.template, item) : "";
          return (
            <button type="button" key={i} aria-label={named(action.label)} disabled={!connected || !text} onClick={() => say(text)}>
              {clampText(action.label, 40)}
            </button>
          );
        }
        const href = action.key ? safeUrl(item[action.key]) : null;
        return href ? (
          <a class="button" key={i} href={href} target="_blank" rel="noopener noreferrer nofollow" aria-label={named(action.label) && `${named(action.label)} ${t.newTab}`}>
            {clampText(action.label, 40)}
            <span class="sr-only"> {t.newTab}</span>
          </a>
        ) : null;
      })}
    </div>
  );
}

/** "N more not shown" when the server sent more items than the layout may show. */
export function More({ result, shown }: { result: ResultMessage; shown: number }) {
  const { t } = useWidget();
  const extra = result.items.length - shown;
  return extra > 0 ? <p class="more">{t.more.replace("{count}", String(extra))}</p> : null;
}
