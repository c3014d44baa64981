// A tool's description, input schema and policy as the console shows them (console/src/api.ts ToolView): the
// tools of a release (consoleApi.ts) and of a published remote MCP server version (remoteReviewApi.ts) alike.
import type { ToolPolicy } from "@caplo/shared";

export function toolView(tool: { description: string; inputSchema: Record<string, unknown>; policy: ToolPolicy; hasStatus: boolean }) {
  return {
    description: tool.description,
    effect: tool.policy.effect,
    confirmation: tool.policy.effect === "write" ? tool.policy.confirmation : null,
    timeoutSeconds: tool.policy.timeoutSeconds ?? null,
    hasStatus: tool.hasStatus,
    inputSchema: tool.inputSchema,
  };
}
