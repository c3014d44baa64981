// The detail layout: one object as label and value pairs (up to 12 columns), with up to two actions.
import { Actions, actionsOf, Cell, columnsOf, itemsOf, type ResultMessage } from "./common.tsx";

export function Detail({ result }: { result: ResultMessage }) {
  const columns = columnsOf(result);
  const item = itemsOf(result)[0];
  if (!item) return null;
  const image = columns.find((c) => c.role === "image");
  return (
    <div class="detail">
      {image && <Cell column={image} item={item} />}
      <dl class="fields">
        {columns
          .filter((c) => c !== image)
          .map((c) => (
            <div class="field" key={c.key}>
              <dt>{c.label}</dt>
              <dd>
                <Cell column={c} item={item} />
              </dd>
            </div>
          ))}
      </dl>
      <Actions actions={actionsOf(result)} item={item} />
    </div>
  );
}
