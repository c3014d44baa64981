// The one configuration: every setting's schema together, read from the environment once at start into
// a typed Config, or the coded problems ({ code, path: the variable, message with the rule and an
// example }). An unknown CAPLO_* variable is a warning naming the setting it most likely meant.
import { z } from "zod";
import { settingMeta, type SettingMeta } from "./setting.ts";
import { channelSettings } from "./settings/channels.ts";
import { clusterSettings } from "./settings/cluster.ts";
import { demoSettings } from "./settings/demo.ts";
import { engineSettings } from "./settings/engine.ts";
import { gatewaySettings } from "./settings/gateway.ts";
import { modelSettings } from "./settings/model.ts";
import { runnerSettings } from "./settings/runner.ts";
import { serveSettings } from "./settings/serve.ts";

/** The settings by area, in the order the operators' table lists them. */
const AREAS = [
  ["The server", serveSettings],
  ["The team API", gatewaySettings],
  ["Conversations and writes", engineSettings],
  ["Several nodes", clusterSettings],
  ["The runner", runnerSettings],
  ["The model", modelSettings],
  ["Messaging channels", channelSettings],
  ["The demo", demoSettings],
] as const;

const shape = { ...serveSettings, ...gatewaySettings, ...engineSettings, ...clusterSettings, ...runnerSettings, ...modelSettings, ...channelSettings, ...demoSettings };

/** Every setting: its key in Config, its area, its value's schema and its description (families by their prefix key). */
export const SETTINGS: readonly { key: SettingKey; area: string; schema: z.ZodType; meta: SettingMeta }[] = AREAS.flatMap(([area, settings]) =>
  Object.entries(settings).map(([key, schema]: [string, z.ZodType]) => {
    const meta = settingMeta.get(schema);
    if (!meta) throw new Error(`setting ${key} has no description`);
    return { key: key as SettingKey, area, schema, meta };
  }),
);

type Shape = typeof shape;
export type SettingKey = keyof Shape;
type Values = { readonly [K in SettingKey]: z.output<Shape[K]> };

/**
 * The parsed settings, by variable name, plus `source`: the known variables' text exactly as given, for
 * the modules that check several variables together (channels, handoff webhooks, the model; see
 * SettingMeta.checkedBy). Families are not single values: their members are in `source`.
 */
export type Config = Omit<Values, "CAPLO_SECRET_" | "CAPLO_HANDOFF_WEBHOOK_URL_"> & { readonly source: Readonly<Record<string, string | undefined>> };

export type SettingError = { code: string; path: string; message: string };
export type ConfigWarning = { code: "setting_unknown"; path: string; message: string };
export type ConfigResult = { ok: true; config: Config; warnings: ConfigWarning[] } | { ok: false; errors: SettingError[]; warnings: ConfigWarning[] };

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Variables set by Caplo itself for processes it starts, and by tests for their own fixtures: neither
 * settings nor typos.
 */
const INTERNAL = [/^CAPLO_EGRESS_SOCKET$/, /^CAPLO_FILE_(NAME|TYPE)$/, /^CAPLO_TEST_/];

/**
 * The coded error of a bad value: the rule, the value and a valid example. Only settings with a rule
 * beyond "any text" can fail, and none of them holds a secret (secrets and tokens are text).
 */
export function settingError(meta: SettingMeta, value: string, path = meta.name): SettingError {
  const example = path.startsWith("--") ? `${path} ${meta.example}` : `${path}=${meta.example}`;
  const message = meta.bareMessage ? meta.rule : `${path} must be ${meta.rule}, not '${value}' (for example ${example})`;
  return { code: meta.code ?? "setting_invalid", path, message };
}

/** Empty means unset, as in a shell's `CAPLO_X= caplo serve`. */
const given = (value: string | undefined) => (value === undefined || value === "" ? undefined : value);

/** One setting's value from its text (a flag's value, or the variable's), or its coded error. */
export function parseSetting<K extends SettingKey>(key: K, value: string | undefined, path?: string): { ok: true; value: z.output<Shape[K]> } | { ok: false; error: SettingError } {
  const schema = shape[key] as z.ZodType;
  const parsed = schema.safeParse(given(value));
  if (parsed.success) return { ok: true, value: parsed.data as z.output<Shape[K]> };
  return { ok: false, error: settingError(settingMeta.get(schema)!, value ?? "", path) };
}

/** Reads and checks every setting at once; the caller starts nothing when it is not ok. */
export function readConfig(env: Env): ConfigResult {
  const values: Record<string, unknown> = {};
  const source: Record<string, string | undefined> = {};
  const errors: SettingError[] = [];
  const known = new Set<string>();
  for (const { key, schema, meta } of SETTINGS) {
    const names = meta.family ? Object.keys(env).filter((name) => name.startsWith(meta.family!) && name.length > meta.family!.length) : [meta.name];
    for (const name of names) {
      known.add(name);
      if (env[name] !== undefined) source[name] = env[name];
      const parsed = schema.safeParse(given(env[name]));
      if (!parsed.success) errors.push(settingError(meta, env[name] ?? "", name));
      else if (!meta.family) values[key] = parsed.data;
    }
  }
  const warnings = unknownSettings(env, known);
  if (errors.length) return { ok: false, errors, warnings };
  return { ok: true, config: { ...(values as Values), source }, warnings };
}

/** The defaults alone (no environment), for tests and tools that start parts of the server. */
export function defaultConfig(overrides: Env = {}): Config {
  const read = readConfig(overrides);
  if (!read.ok) throw new Error(read.errors.map((error) => error.message).join("; "));
  return read.config;
}

/** Every CAPLO_* variable that is not a setting, with the nearest setting's name when it looks like a typo. */
function unknownSettings(env: Env, known: Set<string>): ConfigWarning[] {
  const names = SETTINGS.filter((entry) => !entry.meta.family).map((entry) => entry.meta.name);
  const warnings: ConfigWarning[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith("CAPLO_") || known.has(name) || INTERNAL.some((pattern) => pattern.test(name))) continue;
    // A few letters off (CAPLO_SANDBOXX), or a word short (CAPLO_TRANSCRIPT_BUDGET for ..._CHARS).
    const nearest = names.map((candidate) => ({ candidate, distance: editDistance(name, candidate) })).sort((a, b) => a.distance - b.distance)[0];
    const meant = nearest && nearest.distance <= Math.max(2, Math.floor(name.length / 6)) ? nearest.candidate : names.find((candidate) => candidate.startsWith(`${name}_`) || name.startsWith(`${candidate}_`));
    const hint = meant ? ` (did you mean ${meant}?)` : "";
    warnings.push({ code: "setting_unknown", path: name, message: `${name} is not a Caplo setting and is ignored${hint}; docs/operators/configuration.md lists them` });
  }
  return warnings;
}

/** Levenshtein distance: how many letters to add, drop or change to turn one name into the other. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}
