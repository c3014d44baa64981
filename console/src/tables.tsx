// The console's tables: a header row of column names over the rows a view gives (the audit, the numbers per
// day), and the tools of a release or of a published remote MCP server version in one shape.
import type { ComponentChildren, JSX } from "preact";
import type { ToolView } from "./api.ts";

/** `columns` become the header row (column headers for screen readers); the table's own attributes pass through. */
export function Table({ columns, children, ...table }: JSX.HTMLAttributes<HTMLTableElement> & { columns: string[]; children: ComponentChildren }) {
  return (
    <table {...table}>
      <thead>
        <tr>
          {columns.map((column) => (
            <th key={column} scope="col">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

/** A tool under the name it is shown by (a release's `package/tool`, a remote tool's model name); `subject` is a release tool's. */
export type ShownTool = ToolView & { shownAs: string; subject?: string | null };

const TOOL_COLUMNS = ["Tool", "Effect", "Confirmation", "Timeout"];
/** A release's tools also say who may call them (anyone, or only a verified customer) and whether writes get status checks. */
const RELEASE_TOOL_COLUMNS = ["Tool", "Effect", "Confirmation", "Customer", "Timeout", "Status checks"];

/** Each tool's name opens its description and input schema (text, never markup), then its policy. */
export function ToolTable({ tools, release = false }: { tools: ShownTool[]; release?: boolean }) {
  return (
    <Table columns={release ? RELEASE_TOOL_COLUMNS : TOOL_COLUMNS}>
      {tools.map((tool) => (
        <tr key={tool.shownAs}>
          <th scope="row">
            <details>
              <summary>{tool.shownAs}</summary>
              <p>{tool.description}</p>
              <pre class="schema">{JSON.stringify(tool.inputSchema, null, 2)}</pre>
            </details>
          </th>
          <td>{tool.effect}</td>
          <td>{tool.confirmation ?? "—"}</td>
          {release && <td>{tool.subject === "verified_required" ? "verified only" : "anyone"}</td>}
          <td>{tool.timeoutSeconds ? `${tool.timeoutSeconds} s` : "—"}</td>
          {release && <td>{tool.hasStatus ? "yes" : "no"}</td>}
        </tr>
      ))}
    </Table>
  );
}
