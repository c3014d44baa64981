// How one CAPLO_* setting is defined: its value's zod schema (from the variable's text to the typed
// value, with its default) and, registered beside it, what the operators' table says about it. Every
// setting is defined once, in settings/*.ts; config.ts reads them all and docs are generated from them.
import { z } from "zod";

/** The commands a setting applies to (the operators' table says which). */
export type Command = "serve" | "demo" | "agent publish" | "tool build" | "tool dev" | "tool test" | "tool logs" | "remote" | "secret" | "member" | "tests";

export type SettingMeta = {
  /** The variable, e.g. CAPLO_PORT; a family is written with its placeholder: CAPLO_SECRET_<NAME>. */
  name: string;
  /** The rule a value must follow, as a phrase: "a whole number from 1000 to 600000". */
  rule: string;
  /** A valid value, shown in errors and the table. */
  example: string;
  /** The default as the table shows it ("—": unset). */
  default: string;
  commands: readonly Command[];
  /** The sentence of the operators' table: what it sets. */
  doc: string;
  /** The flag that sets it too (a flag wins). */
  flag?: string;
  /** The error code when it is invalid; default setting_invalid. Older settings keep the code they always had. */
  code?: string;
  /**
   * Checked where it is used, with other settings (channels, handoff webhooks, the model): the schema
   * takes any text and the module named here refuses bad values at start with its own codes.
   */
  checkedBy?: string;
  /** A family: every variable whose name starts with this prefix (CAPLO_SECRET_ for CAPLO_SECRET_<NAME>). */
  family?: string;
  /** The message is the rule alone (kept as it was; a test pins it). */
  bareMessage?: boolean;
};

/** Every setting's description, by the zod schema of its value. */
export const settingMeta = z.registry<SettingMeta>();

/** A setting: the value's schema, registered with its description. */
export function setting<T extends z.ZodType>(meta: SettingMeta, schema: T): T {
  settingMeta.add(schema, meta);
  return schema;
}

/** Text to whole number in [min, max]: digits only (no sign, point, exponent or spaces). */
export const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]+$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** One of the listed words. */
export const oneOf = <const T extends readonly [string, ...string[]]>(values: T) => z.enum(values);

/** `1` turns it on; unset or empty is off. */
export const flagOn = () => z.literal("1").transform(() => true as const);

/** Any text (checked by the module that uses it, see SettingMeta.checkedBy). */
export const text = () => z.string();

/** A URL of one of the given schemes (`redis:`, `https:` ...). */
export const urlOf = (...schemes: string[]) => z.string().refine((value) => schemes.some((scheme) => value.startsWith(`${scheme}//`)) && URL.canParse(value));
