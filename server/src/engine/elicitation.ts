// Elicitation as the customer sees it: a tool's requestedSchema (already checked by the runner against
// the tool's declared fields) turned into the channel-neutral question fields of a `question` message.
import type { OutboundOf } from "@caplo/shared";

type QuestionField = OutboundOf<"question">["fields"][number];

function options(property: Record<string, unknown>): { value: string; label: string }[] | undefined {
  if (Array.isArray(property.enum)) {
    const names = Array.isArray(property.enumNames) ? property.enumNames : [];
    return property.enum.map((value, index) => ({ value: String(value), label: String(names[index] ?? value) }));
  }
  if (Array.isArray(property.oneOf)) {
    return property.oneOf.flatMap((option) => {
      if (!option || typeof option !== "object") return [];
      const entry = option as { const?: unknown; title?: unknown };
      return entry.const === undefined ? [] : [{ value: String(entry.const), label: String(entry.title ?? entry.const) }];
    });
  }
  return undefined;
}

export function questionFields(schema: Record<string, unknown>): QuestionField[] {
  const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  return Object.entries(properties).map(([name, property]) => {
    const choices = options(property);
    const type = property.type;
    const kind: QuestionField["kind"] = choices
      ? "choice"
      : type === "number" || type === "integer" || type === "boolean"
        ? type
        : "string";
    return {
      name,
      kind,
      required: required.has(name),
      ...(typeof property.title === "string" && { title: property.title }),
      ...(typeof property.description === "string" && { description: property.description }),
      ...(choices && { options: choices }),
      ...(typeof property.minLength === "number" && { minLength: property.minLength }),
      ...(typeof property.maxLength === "number" && { maxLength: property.maxLength }),
      ...(typeof property.minimum === "number" && { minimum: property.minimum }),
      ...(typeof property.maximum === "number" && { maximum: property.maximum }),
      ...(typeof property.format === "string" && { format: property.format }),
    };
  });
}
