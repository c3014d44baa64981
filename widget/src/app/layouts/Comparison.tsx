// The comparison layout: up to 4 items side by side, one row per column (up to 12), each item with
// up to two actions under it.
import { Actions, actionsOf, Cell, cellPlain, columnsOf, itemsOf, More, titleColumn, type ResultMessage } from "./common.tsx";

export function Comparison({ result }: { result: ResultMessage }) {
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const actions = actionsOf(result);
  const title = titleColumn(columns);
  const rows = columns.filter((c) => c !== title);
  return (
    <>
      <div class="table-scroll">
        <table class="comparison">
          <thead>
            <tr>
              <td />
              {items.map((item, i) => (
                <th scope="col" key={i}>
                  {cellPlain(title, item)}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.key}>
                <th scope="row">{c.label}</th>
                {items.map((item, i) => (
                  <td key={i}>
                    <Cell column={c} item={item} />
                  </td>
                ))}
              </tr>
            ))}
            {actions.length > 0 && (
              <tr>
                <td />
                {items.map((item, i) => (
                  <td key={i}>
                    <Actions actions={actions} item={item} name={cellPlain(titleColumn(columns), item)} />
                  </td>
                ))}
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <More result={result} shown={items.length} />
    </>
  );
}
