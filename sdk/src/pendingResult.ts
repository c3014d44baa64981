// A pending write result through the MCP SDK's McpServer: the seed's MCP example answers pending as
// `{ content, _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "pending", operationRef } } }`, with no
// structuredContent (a pending write has no result yet). McpServer checks every non-error result of a tool
// with an outputSchema and turns that one into an error ("has an output schema but no structured content"),
// which the runner must count as unknown. Caplo's host lets a pending result skip that check; every
// other result is checked as before. A package with its own copy of the SDK is not adjusted (the build
// warns: pending_needs_structured_content).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { EFFECT_META_KEY } from "@caplo/shared/outcome";

type Validate = (this: unknown, tool: unknown, result: unknown, name: string) => Promise<void>;
const PATCHED = Symbol.for("si.caplo/tools.pending-output");

function isPending(result: unknown): boolean {
  const meta = (result as { _meta?: Record<string, unknown> } | null)?._meta;
  const effect = meta?.[EFFECT_META_KEY] as { outcome?: unknown } | undefined;
  return effect?.outcome === "pending";
}

/** Lets pending results of tools with an outputSchema through this copy of McpServer. Whether it could. */
export function allowPendingResults(server: { prototype: object } = McpServer): boolean {
  const proto = server.prototype as { validateToolOutput?: Validate; [PATCHED]?: true };
  if (proto[PATCHED]) return true;
  const original = proto.validateToolOutput;
  if (typeof original !== "function") return false;
  proto.validateToolOutput = async function (this: unknown, tool, result, name) {
    if (isPending(result)) return;
    return original.call(this, tool, result, name);
  };
  proto[PATCHED] = true;
  return true;
}
