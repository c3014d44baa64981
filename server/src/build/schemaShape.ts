// Reads what the build needs from a tool's JSON Schema: a direct property by JSON pointer, its types,
// enum, format, and an array's item schema. Follows local `$ref`s (#/$defs/..., #/definitions/...)
// and the anyOf/oneOf a nullable or optional property is written with.
export type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Schema => value !== null && typeof value === "object" && !Array.isArray(value);

/** Follow a local $ref once or a few times; undefined when it cannot be resolved. */
export function deref(schema: unknown, root: Schema, depth = 0): Schema | undefined {
  if (!isObject(schema)) return undefined;
  const ref = schema.$ref;
  if (typeof ref !== "string") return schema;
  if (depth > 16 || !ref.startsWith("#/")) return undefined;
  let current: unknown = root;
  for (const part of ref.slice(2).split("/")) {
    if (!isObject(current)) return undefined;
    current = current[part.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return deref(current, root, depth + 1);
}

/** The alternatives a schema is written as (itself, or the members of anyOf/oneOf). */
function alternatives(schema: Schema, root: Schema): Schema[] {
  const union = (schema.anyOf ?? schema.oneOf) as unknown;
  if (Array.isArray(union)) return union.flatMap((member) => {
    const resolved = deref(member, root);
    return resolved ? alternatives(resolved, root) : [];
  });
  return [schema];
}

/** The JSON types a schema allows, "null" left out (a nullable string is a string here). */
export function typesOf(schema: Schema, root: Schema): Set<string> {
  const types = new Set<string>();
  for (const alternative of alternatives(schema, root)) {
    const type = alternative.type;
    if (typeof type === "string") {
      types.add(type);
    } else if (Array.isArray(type)) {
      for (const t of type) if (typeof t === "string") types.add(t);
    } else if (Array.isArray(alternative.enum)) {
      for (const value of alternative.enum) types.add(value === null ? "null" : typeof value);
    } else if ("const" in alternative) {
      types.add(alternative.const === null ? "null" : typeof alternative.const);
    }
  }
  types.delete("null");
  return types;
}

/** Whether every alternative of the schema is one of `allowed` (integer counts as number). */
export function isOnly(schema: Schema, root: Schema, allowed: readonly string[]): boolean {
  const types = typesOf(schema, root);
  if (types.size === 0) return false;
  return [...types].every((type) => allowed.includes(type) || (type === "integer" && allowed.includes("number")));
}

/** The string enum values of a schema (across its alternatives), or undefined when it has no enum. */
export function enumOf(schema: Schema, root: Schema): unknown[] | undefined {
  const values: unknown[] = [];
  let found = false;
  for (const alternative of alternatives(schema, root)) {
    if (Array.isArray(alternative.enum)) {
      found = true;
      values.push(...alternative.enum.filter((value) => value !== null));
    } else if ("const" in alternative) {
      found = true;
      if (alternative.const !== null) values.push(alternative.const);
    } else if (alternative.type !== "null") return undefined; // an alternative without enum: open set
  }
  return found ? values : undefined;
}

/** The format of a string schema (the first alternative that names one). */
export function formatOf(schema: Schema, root: Schema): string | undefined {
  for (const alternative of alternatives(schema, root)) if (typeof alternative.format === "string") return alternative.format;
  return undefined;
}

/** The direct property a pointer like `/orderId` names, or undefined. */
export function propertyAt(schema: Schema, pointer: string, root: Schema): Schema | undefined {
  const name = pointer.slice(1);
  for (const alternative of alternatives(schema, root)) {
    const properties = alternative.properties;
    if (isObject(properties) && Object.hasOwn(properties, name)) return deref(properties[name], root);
  }
  return undefined;
}

/** Names of the direct properties of an object schema. */
export function propertyNames(schema: Schema, root: Schema): string[] {
  return alternatives(schema, root).flatMap((alternative) => (isObject(alternative.properties) ? Object.keys(alternative.properties) : []));
}

/** Whether a property is required by the object schema. */
export function isRequired(schema: Schema, name: string, root: Schema): boolean {
  return alternatives(schema, root).some((alternative) => Array.isArray(alternative.required) && alternative.required.includes(name));
}

/** The item schema of an array schema, or undefined. */
export function itemsOf(schema: Schema, root: Schema): Schema | undefined {
  for (const alternative of alternatives(schema, root)) {
    if (alternative.type === "array" || (Array.isArray(alternative.type) && alternative.type.includes("array"))) return deref(alternative.items, root);
  }
  return undefined;
}
