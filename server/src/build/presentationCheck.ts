// Checks a tool's presentation against its schemas, as the seeds require of a build: field paths are
// direct properties of the input, receipt and result paths of the output, columns direct primitive
// properties of an item; roles fit their properties; column and action counts fit the layout; choices
// have exactly one reply; a page layout has `page`; a result needs an outputSchema. Every problem is
// reported as presentation_invalid with its caplo.yaml path.
import { COLUMNS_MAX, COLUMNS_MAX_WIDE, WIDE_COLUMN_LAYOUTS, type Column, type Layout, type ToolPolicy } from "@caplo/shared";
import type { BuildError } from "./buildError.ts";
import { enumOf, formatOf, isOnly, isRequired, itemsOf, propertyAt, propertyNames, typesOf, type Schema } from "./schemaShape.ts";

export type ToolSchemas = { inputSchema: Schema; outputSchema?: Schema };

const URL_FORMATS = ["uri", "iri"];
const TIME_FORMATS = ["date", "date-time"];
const ITEM_LIST_LAYOUTS: readonly Layout[] = ["list", "table", "cards", "choices", "comparison", "timeline", "map"];
const NO_ACTION_LAYOUTS: readonly Layout[] = ["list", "table", "timeline", "page"];

/** Every presentation problem of one tool; `at` is the caplo.yaml path of the tool's policy ("" or "tools[1]."). */
export function checkPresentation(policy: ToolPolicy, schemas: ToolSchemas, at: string): BuildError[] {
  const errors: BuildError[] = [];
  const bad = (path: string, message: string) => errors.push({ code: "presentation_invalid", path: `${at}${path}`, message });
  const input = schemas.inputSchema;
  const output = schemas.outputSchema;
  const presentation = policy.presentation;
  if (!presentation) return errors;

  presentation.fields.forEach((field, i) => {
    const where = `presentation.fields[${i}]`;
    const property = propertyAt(input, field.path, input);
    if (!property) {
      bad(`${where}.path`, `${field.path} is not a direct property of the tool's inputSchema (it has: ${list(propertyNames(input, input))})`);
      return;
    }
    if (field.editable && !isOnly(property, input, ["string"])) bad(`${where}.editable`, `only a string input can be editable; ${field.path} is ${describeTypes(property, input)}`);
    if (field.input === "select" && !field.options) bad(`${where}.options`, `input: select needs options`);
    if (field.options && field.input !== "select") bad(`${where}.input`, `options are offered only with input: select`);
    const allowed = enumOf(property, input);
    field.options?.forEach((option, j) => {
      if (allowed && !allowed.includes(option.value)) bad(`${where}.options[${j}].value`, `${JSON.stringify(option.value)} is not one of the enum values of ${field.path}`);
    });
  });

  if (presentation.receipt) {
    if (!output) bad("presentation.receipt", "a receipt shows fields of structuredContent, so the tool needs an outputSchema");
    else {
      presentation.receipt.fields.forEach((field, i) => {
        if (!propertyAt(output, field.path, output)) {
          bad(`presentation.receipt.fields[${i}].path`, `${field.path} is not a direct property of the tool's outputSchema (it has: ${list(propertyNames(output, output))})`);
        }
      });
    }
  }

  const result = presentation.result;
  if (result) {
    if (!output) bad("presentation.result", "presentation.result needs an outputSchema: it shows items of structuredContent");
    else errors.push(...checkResult(result, output, at));
  }
  return errors;
}

type Result = NonNullable<NonNullable<ToolPolicy["presentation"]>["result"]>;

function checkResult(result: Result, output: Schema, at: string): BuildError[] {
  const errors: BuildError[] = [];
  const bad = (path: string, message: string) => errors.push({ code: "presentation_invalid", path: `${at}presentation.result${path}`, message });
  const layout = result.layout;
  const page = "page" in result ? result.page : undefined;

  if (layout === "page" && !page) bad("", "layout page needs page: its label, display and origins");
  if (layout !== "page" && page) bad(".page", `page is for layout page only, not ${layout}`);

  // Which object the columns are properties of.
  let item: Schema | undefined;
  if (layout === "detail" || layout === "page") {
    if (result.path === undefined) item = output;
    else {
      const property = propertyAt(output, result.path, output);
      if (!property) bad(".path", `${result.path} is not a direct property of the tool's outputSchema`);
      else if (!isOnly(property, output, ["object"])) bad(".path", `a ${layout} shows one object: ${result.path} is ${describeTypes(property, output)}`);
      else item = property;
    }
  } else if (result.path === undefined) {
    bad(".path", `a ${layout} shows the items of one array property of the output: name it in path`);
  } else {
    const property = propertyAt(output, result.path, output);
    const items = property && itemsOf(property, output);
    if (!property) bad(".path", `${result.path} is not a direct property of the tool's outputSchema (it has: ${list(propertyNames(output, output))})`);
    else if (!items || !isOnly(items, output, ["object"])) bad(".path", `a ${layout} needs ${result.path} to be an array of objects`);
    else item = items;
  }

  const maxColumns = (WIDE_COLUMN_LAYOUTS as readonly string[]).includes(layout) ? COLUMNS_MAX_WIDE : COLUMNS_MAX;
  if (result.columns.length > maxColumns) bad(".columns", `a ${layout} shows at most ${maxColumns} columns, not ${result.columns.length}`);

  if (item) {
    const itemRoot = output;
    result.columns.forEach((column, i) => errors.push(...checkColumn(column, item, itemRoot, `${at}presentation.result.columns[${i}]`)));
    if (layout === "map") {
      for (const role of ["latitude", "longitude"] as const) {
        if (!result.columns.some((column) => column.role === role)) bad(".columns", `a map needs a ${role} column`);
      }
    }
  }

  const actions = result.actions ?? [];
  if ((NO_ACTION_LAYOUTS as readonly string[]).includes(layout) && actions.length > 0) bad(".actions", `a ${layout} has no item actions`);
  if (layout === "choices" && (actions.length !== 1 || actions[0]!.kind !== "reply")) bad(".actions", "choices need exactly one reply action");
  const columnNames = new Set(result.columns.map((column) => column.path.slice(1)));
  actions.forEach((action, i) => {
    const where = `.actions[${i}]`;
    if (action.kind === "reply") {
      if (action.template === undefined) bad(`${where}.template`, "a reply action needs a template: the visitor message it sends");
      if (action.path !== undefined) bad(`${where}.path`, "path is for link actions; a reply sends its template");
      for (const [, name] of (action.template ?? "").matchAll(/\{([^{}]*)\}/g)) {
        if (!columnNames.has(name!)) bad(`${where}.template`, `{${name}} is not a listed column (columns: ${list([...columnNames])})`);
      }
    } else {
      if (action.template !== undefined) bad(`${where}.template`, "template is for reply actions; a link opens its path");
      if (action.path === undefined) bad(`${where}.path`, "a link action needs path: the item's URL property");
      else if (item) {
        const property = propertyAt(item, action.path, output);
        if (!property) bad(`${where}.path`, `${action.path} is not a direct property of an item`);
        else if (!isUrl(property, output)) bad(`${where}.path`, `${action.path} must be a URL string (type: string, format: uri)`);
      }
    }
  });
  return errors;
}

function checkColumn(column: Column, item: Schema, root: Schema, where: string): BuildError[] {
  const errors: BuildError[] = [];
  const bad = (path: string, message: string) => errors.push({ code: "presentation_invalid", path: `${where}${path}`, message });
  const property = propertyAt(item, column.path, root);
  if (!property) {
    bad(".path", `${column.path} is not a direct property of an item (it has: ${list(propertyNames(item, root))})`);
    return errors;
  }
  if (!isOnly(property, root, ["string", "number", "boolean"])) {
    bad(".path", `columns are direct primitive properties: ${column.path} is ${describeTypes(property, root)}`);
    return errors;
  }
  const role = column.role;
  if (column.currency && role !== "money") bad(".currency", "currency is for money columns only");
  if (column.statuses && role !== "status") bad(".statuses", "statuses are for status columns only");
  switch (role) {
    case "money": {
      if (!isOnly(property, root, ["number"])) bad(".role", `a money column needs a number: ${column.path} is ${describeTypes(property, root)}`);
      const currency = column.currency;
      if (!currency || (currency.path === undefined) === (currency.code === undefined)) {
        bad(".currency", "a money column needs a currency: either path (a sibling string property) or code (ISO 4217), not both");
      } else if (currency.path !== undefined) {
        const sibling = propertyAt(item, currency.path, root);
        if (!sibling || !isOnly(sibling, root, ["string"])) bad(".currency.path", `${currency.path} must be a string property of the same item`);
      }
      break;
    }
    case "status": {
      const values = enumOf(property, root);
      if (!isOnly(property, root, ["string"]) || !values || values.length === 0) {
        bad(".role", `a status column needs a string enum: ${column.path} has no enum`);
        break;
      }
      const statuses = column.statuses ?? {};
      const missing = values.filter((value) => typeof value === "string" && !Object.hasOwn(statuses, value));
      if (missing.length > 0) bad(".statuses", `every enum value needs a timeline state; missing: ${list(missing.map(String))}`);
      for (const key of Object.keys(statuses)) {
        if (!values.includes(key)) bad(`.statuses.${key}`, `${JSON.stringify(key)} is not an enum value of ${column.path}`);
      }
      break;
    }
    case "latitude":
    case "longitude":
      if (!isOnly(property, root, ["number"])) bad(".role", `a ${role} column needs a number in degrees: ${column.path} is ${describeTypes(property, root)}`);
      break;
    case "time":
      if (!isOnly(property, root, ["string"]) || !TIME_FORMATS.includes(formatOf(property, root) ?? "")) {
        bad(".role", `a time column needs a string with format date or date-time: ${column.path} is ${describeTypes(property, root)}`);
      }
      break;
    case "image":
    case "link":
      if (!isUrl(property, root)) bad(".role", `an ${role} column needs a URL string (type: string, format: uri): ${column.path} is ${describeTypes(property, root)}`);
      break;
    default:
      break;
  }
  return errors;
}

function isUrl(property: Schema, root: Schema): boolean {
  return isOnly(property, root, ["string"]) && URL_FORMATS.includes(formatOf(property, root) ?? "");
}

function describeTypes(property: Schema, root: Schema): string {
  const types = [...typesOf(property, root)];
  const format = formatOf(property, root);
  if (types.length === 0) return "of no declared type";
  return `${types.join(" or ")}${format ? ` (format ${format})` : ""}`;
}

function list(names: string[]): string {
  return names.length === 0 ? "none" : names.join(", ");
}

/** The subject selector names an optional input property (the runner fills it, the model may not). */
export function checkSubjectSelector(policy: ToolPolicy, schemas: ToolSchemas, at: string): BuildError[] {
  const selector = policy.subject?.selector;
  if (!selector) return [];
  const input = schemas.inputSchema;
  if (!propertyAt(input, `/${selector}`, input)) {
    return [{ code: "manifest_invalid", path: `${at}subject.selector`, message: `${selector} is not a property of the tool's inputSchema` }];
  }
  if (isRequired(input, selector, input)) {
    return [{ code: "manifest_invalid", path: `${at}subject.selector`, message: `${selector} must be an optional input property: the runner fills it and refuses it from the model` }];
  }
  return [];
}
