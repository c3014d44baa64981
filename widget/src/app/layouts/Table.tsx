// The table layout: up to 20 rows of up to 6 columns, with header cells for screen readers; it
// scrolls sideways inside its own box on a narrow phone screen.
import { Cell, columnsOf, itemsOf, More, type ResultMessage } from "./common.tsx";

export function Table({ result }: { result: ResultMessage }) {
  const columns = columnsOf(result);
  const items = itemsOf(result);
  return (
    <>
      <div class="table-scroll">
        <table>
          <thead>
            <tr>
              {columns.map((c) => (
                <th scope="col" key={c.key}>
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {items.map((item, i) => (
              <tr key={i}>
                {columns.map((c) => (
                  <td key={c.key}>
                    <Cell column={c} item={item} />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <More result={result} shown={items.length} />
    </>
  );
}
