// Presentation: what the customer is shown of a tool call, and nothing more. Review cards from
// presentation.fields (last4 masked, editable only where the channel can edit), customer edits checked
// against the fields and the input schema, results projected to the listed columns within the layout's
// item limit, and receipts from structuredContent.
import {
  COLUMNS_MAX,
  COLUMNS_MAX_WIDE,
  LAYOUT_ITEMS_MAX,
  MISLEADING_CHARACTER,
  WIDE_COLUMN_LAYOUTS,
  forbiddenKeyPath,
  type ChannelCapabilities,
  type DisplayField,
  type OutboundOf,
  type ResultColumn,
  type ReviewField,
} from "@caplo/shared";
import { validateAgainst } from "../runner/schemaValidator.ts";
import type { EngineTool } from "./release.ts";

export type Problem = { code: string; path: string; message: string };
type Primitive = string | number | boolean | null;

/** `/orderId` → `orderId` (presentation paths point at one direct property). */
export function keyOf(pointer: string): string {
  return pointer.slice(1);
}

/** A value as the customer sees it: last4 keeps only the final four characters. */
export function showValue(value: unknown, display: "plain" | "last4"): string {
  const text = value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value);
  return display === "last4" ? text.slice(-4) : text;
}

function propertySchema(tool: EngineTool, key: string): Record<string, unknown> | undefined {
  const properties = tool.inputSchema.properties as Record<string, Record<string, unknown>> | undefined;
  return properties?.[key];
}

function isStringProperty(tool: EngineTool, key: string): boolean {
  const schema = propertySchema(tool, key);
  const type = schema?.type;
  return type === "string" || (Array.isArray(type) && type.includes("string"));
}

/**
 * The first key or string anywhere in the arguments (keys before their values, in order) for which `found`
 * finds something, with its JSON-pointer path; null when none does.
 */
function firstInArguments<T extends object>(value: unknown, found: (text: string) => T | undefined, path = ""): (T & { path: string }) | null {
  if (typeof value === "string") {
    const hit = found(value);
    return hit ? { path: path || "/", ...hit } : null;
  }
  if (!value || typeof value !== "object") return null;
  for (const [key, inner] of Object.entries(value)) {
    const at = `${path}/${key}`;
    const hit = found(key);
    if (hit) return { path: at, ...hit };
    const deeper = firstInArguments(inner, found, at);
    if (deeper) return deeper;
  }
  return null;
}

/** The first argument holding a MISLEADING_CHARACTER (the review card would show another call than the one that runs), or null. */
export function misleadingArgument(value: unknown): { path: string; codePoint: string } | null {
  return firstInArguments(value, (text) => {
    const char = text.match(MISLEADING_CHARACTER)?.[0];
    return char ? { codePoint: `U+${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}` } : undefined;
  });
}

/** Scripts whose letters pass for one another (Latin a, Cyrillic а, Greek α): a word mixing them reads as another word. */
const LOOKALIKE_SCRIPTS = [
  ["Latin", /\p{Script=Latin}/u],
  ["Cyrillic", /\p{Script=Cyrillic}/u],
  ["Greek", /\p{Script=Greek}/u],
] as const;

/**
 * The first argument with a word that mixes Latin, Cyrillic and Greek letters ("pаypal" with a Cyrillic а
 * reads as "paypal" on the card while the tool gets another name, address or account), or null. Words wholly
 * of one script, and text mixing scripts word by word, pass.
 */
export function lookalikeArgument(value: unknown): { path: string; word: string; scripts: string[] } | null {
  return firstInArguments(value, (text) => {
    for (const [word] of text.matchAll(/[\p{L}\p{M}]+/gu)) {
      const scripts = LOOKALIKE_SCRIPTS.filter(([, letters]) => letters.test(word)).map(([name]) => name);
      if (scripts.length > 1) return { word, scripts };
    }
    return undefined;
  });
}

/** With a presentation, the first argument that is not a declared property of the tool's input, or null. */
export function undeclaredArgument(tool: EngineTool, args: Record<string, unknown>): string | null {
  if (!tool.policy.presentation) return null;
  const properties = (tool.inputSchema.properties as Record<string, unknown> | undefined) ?? {};
  return Object.keys(args).find((key) => !Object.prototype.hasOwnProperty.call(properties, key)) ?? null;
}

/** The review card's title and fields for proposed arguments. Without a presentation every argument is shown plainly. */
export function reviewCard(tool: EngineTool, args: Record<string, unknown>, capabilities: ChannelCapabilities): { title: string; fields: ReviewField[] } {
  const presentation = tool.policy.presentation;
  if (!presentation) {
    return {
      title: tool.tool.replaceAll("_", " ").replace(/^./, (first) => first.toUpperCase()),
      fields: Object.entries(args).map(([key, value]) => ({ path: `/${key}`, label: key, display: "plain" as const, value: showValue(value, "plain"), editable: false })),
    };
  }
  return {
    title: presentation.title,
    fields: presentation.fields.map((field) => {
      const key = keyOf(field.path);
      // Editable only for string inputs on a channel that can edit, and never when masked (the customer cannot see it).
      const editable = field.editable === true && capabilities.editableFields && field.display === "plain" && isStringProperty(tool, key);
      return {
        path: field.path,
        label: field.label,
        display: field.display,
        value: showValue(args[key], field.display),
        editable,
        ...(editable && field.input && { input: field.input }),
        ...(editable && field.options && { options: field.options.map((option) => ({ value: option.value, label: option.label })) }),
      };
    }),
  };
}

/**
 * The arguments that run: the proposal plus the customer's edits. Only editable string fields may change,
 * a select field only to one of its options, and the result must satisfy the tool's input schema.
 */
export function applyEdits(
  tool: EngineTool,
  args: Record<string, unknown>,
  edits: Record<string, string> | undefined,
  capabilities: ChannelCapabilities,
): { ok: true; args: Record<string, unknown> } | { ok: false; error: Problem } {
  // Object.entries would show an own "__proto__" key, but `next[key] = value` would set the prototype instead.
  const forbidden = forbiddenKeyPath(edits);
  if (forbidden) return { ok: false, error: { code: "edit_invalid", path: `edits.${forbidden.join(".")}`, message: `${forbidden.at(-1)} is not a field that can be edited` } };
  const entries = Object.entries(edits ?? {});
  if (entries.length === 0) return { ok: true, args: { ...args } };
  if (!capabilities.editableFields) {
    return { ok: false, error: { code: "edits_not_supported", path: "edits", message: "this channel cannot edit review fields; confirm or decline as proposed" } };
  }
  const card = reviewCard(tool, args, capabilities);
  const next = { ...args };
  for (const [path, value] of entries) {
    const field = card.fields.find((candidate) => candidate.path === path);
    if (!field || !field.editable) {
      return { ok: false, error: { code: "field_not_editable", path: `edits.${path}`, message: `${path} is not an editable field of this review` } };
    }
    if (field.options && !field.options.some((option) => option.value === value)) {
      return { ok: false, error: { code: "option_invalid", path: `edits.${path}`, message: `${path} must be one of: ${field.options.map((option) => option.value).join(", ")}` } };
    }
    next[keyOf(path)] = value;
  }
  const issues = validateAgainst(tool.inputSchema, next);
  if (issues.length > 0) {
    const issue = issues[0]!;
    return { ok: false, error: { code: "edit_invalid", path: `edits${issue.path ? `.${issue.path}` : ""}`, message: `the edited arguments do not fit the tool: ${issue.message}` } };
  }
  return { ok: true, args: next };
}

function isPrimitive(value: unknown): value is Primitive {
  return value === null || ["string", "number", "boolean"].includes(typeof value);
}

/** A result layout from structuredContent: items projected to the listed columns, at most the layout's item count. */
export function projectResult(tool: EngineTool, structured: Record<string, unknown> | undefined, id: string, callId: string): OutboundOf<"result"> | undefined {
  const result = tool.policy.presentation?.result;
  if (!result || !structured) return undefined;
  const layout = result.layout;
  const single = layout === "detail" || layout === "page";
  let rawItems: unknown[];
  if (single) {
    const target = result.path ? structured[keyOf(result.path)] : structured;
    rawItems = target && typeof target === "object" && !Array.isArray(target) ? [target] : [];
  } else {
    const list = result.path ? structured[keyOf(result.path)] : undefined;
    rawItems = Array.isArray(list) ? list : [];
  }
  const maxColumns = (WIDE_COLUMN_LAYOUTS as readonly string[]).includes(layout) ? COLUMNS_MAX_WIDE : COLUMNS_MAX;
  const columnSpecs = result.columns.slice(0, maxColumns);
  const columns: ResultColumn[] = columnSpecs.map((column) => ({
    key: keyOf(column.path),
    label: column.label,
    display: column.display,
    ...(column.role && { role: column.role }),
    ...(column.currency && {
      currency: { ...(column.currency.code && { code: column.currency.code }), ...(column.currency.path && { key: keyOf(column.currency.path) }) },
    }),
    ...(column.statuses && { statuses: column.statuses }),
  }));
  const actions = result.actions?.map((action) => ({
    kind: action.kind,
    label: action.label,
    ...(action.template && { template: action.template }),
    ...(action.path && { key: keyOf(action.path) }),
  }));
  // Keys shown besides the columns: a money column's currency property and a link action's URL property.
  const extraKeys = [
    ...columns.flatMap((column) => (column.currency?.key ? [column.currency.key] : [])),
    ...(actions ?? []).flatMap((action) => (action.key ? [action.key] : [])),
  ];
  const items = rawItems.slice(0, LAYOUT_ITEMS_MAX[layout]).flatMap((raw) => {
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) return [];
    const source = raw as Record<string, unknown>;
    const item: Record<string, Primitive> = {};
    for (const column of columns) {
      const value = source[column.key];
      if (value === undefined || !isPrimitive(value)) continue;
      item[column.key] = column.display === "last4" ? showValue(value, "last4") : value;
    }
    for (const key of extraKeys) {
      const value = source[key];
      if (value !== undefined && isPrimitive(value) && !(key in item)) item[key] = value;
    }
    return [item];
  });
  const page = "page" in result && result.page ? result.page : undefined;
  const urlKey = columns.find((column) => column.role === "link")?.key;
  return {
    type: "result",
    id,
    callId,
    layout,
    title: result.title,
    columns,
    items,
    ...(actions && { actions }),
    ...(page && { page: { label: page.label, display: page.display, origins: page.origins, ...(urlKey && { urlKey }) } }),
  };
}

/** Receipt fields from an applied write's structuredContent (display only: never decides the outcome). */
export function receiptFields(tool: EngineTool, structured: Record<string, unknown> | undefined): DisplayField[] | undefined {
  const receipt = tool.policy.presentation?.receipt;
  if (!receipt || !structured) return undefined;
  return receipt.fields.flatMap((field) => {
    const value = structured[keyOf(field.path)];
    return value === undefined ? [] : [{ label: field.label, value: showValue(value, field.display) }];
  });
}

/** The tool definition the model sees: the subject selector removed, because it is never the model's to fill. */
export function modelParameters(tool: EngineTool): Record<string, unknown> {
  const selector = tool.policy.subject?.selector;
  if (!selector) return tool.inputSchema;
  const properties = { ...((tool.inputSchema.properties as Record<string, unknown> | undefined) ?? {}) };
  delete properties[selector];
  const required = Array.isArray(tool.inputSchema.required) ? tool.inputSchema.required.filter((name) => name !== selector) : undefined;
  return { ...tool.inputSchema, properties, ...(required && { required }) };
}
