// The list layout: up to 20 items, each named by its title column with the other columns beneath.
import { Cell, columnsOf, itemsOf, More, titleColumn, type ResultMessage } from "./common.tsx";

export function List({ result }: { result: ResultMessage }) {
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const title = titleColumn(columns);
  const rest = columns.filter((c) => c !== title);
  return (
    <>
      <ul class="list">
        {items.map((item, i) => (
          <li key={i}>
            {title && (
              <strong class="item-title">
                <Cell column={title} item={item} />
              </strong>
            )}
            {rest.map((c) => (
              <span class="item-field" key={c.key}>
                {/* A link's text is its label already: no "Return label: Return label". */}
                {c.role !== "link" && <span class="label">{c.label}: </span>}
                <Cell column={c} item={item} />
              </span>
            ))}
          </li>
        ))}
      </ul>
      <More result={result} shown={items.length} />
    </>
  );
}
