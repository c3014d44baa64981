// TypeScript types read from a JSON Schema literal, so `defineTool({ inputSchema: {...}, handler })`
// types the handler's arguments without a second declaration. Covers the JSON Schema a tool writes:
// object, array, string, number, integer, boolean, null, enum and const.

/** A JSON Schema, as loose as tool authors write it. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** The schema of a tool's input or output: `type: "object"`. */
export type JsonObjectSchema = {
  readonly type: "object";
  readonly properties?: { readonly [property: string]: JsonSchema };
  readonly required?: readonly string[];
  readonly [keyword: string]: unknown;
};

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type ObjectOf<P, R> = Simplify<
  { -readonly [K in keyof P as K extends R ? K : never]: FromSchema<P[K]> } & {
    -readonly [K in keyof P as K extends R ? never : K]?: FromSchema<P[K]>;
  }
>;

/** The value type a JSON Schema describes (depth-limited; unknown for what it cannot read). */
export type FromSchema<S, Depth extends unknown[] = []> = Depth["length"] extends 8
  ? unknown
  : S extends { readonly enum: readonly (infer E)[] }
    ? E
    : S extends { readonly const: infer C }
      ? C
      : S extends { readonly type: "string" }
        ? string
        : S extends { readonly type: "number" | "integer" }
          ? number
          : S extends { readonly type: "boolean" }
            ? boolean
            : S extends { readonly type: "null" }
              ? null
              : S extends { readonly type: "array"; readonly items: infer I }
                ? FromSchema<I, [...Depth, 1]>[]
                : S extends { readonly type: "array" }
                  ? unknown[]
                  : S extends { readonly type: "object"; readonly properties: infer P }
                    ? ObjectOf<P, S extends { readonly required: readonly (infer R)[] } ? R : never>
                    : S extends { readonly type: "object" }
                      ? Record<string, unknown>
                      : unknown;
