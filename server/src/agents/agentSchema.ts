// The JSON Schema of agent.yaml (draft 2020-12), generated from the zod schema in @caplo/shared and
// checked in as schemas/agent.schema.json; a test fails when the two drift apart.
import { z } from "zod";
import { agentConfigSchema } from "@caplo/shared";

export const AGENT_SCHEMA_ID = "https://docs.caplo.si/schemas/agent.schema.json";

/** The schema of what an author writes (defaults make fields optional), as the editor sees it. */
export function agentJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(agentConfigSchema, { target: "draft-2020-12", io: "input", unrepresentable: "any" });
  return { $schema: generated.$schema, $id: AGENT_SCHEMA_ID, ...generated };
}

/** The file's exact text: two-space JSON and a final newline. */
export function agentJsonSchemaText(): string {
  return `${JSON.stringify(agentJsonSchema(), null, 2)}\n`;
}
