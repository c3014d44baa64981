// The configuration's public surface: read every setting once (readConfig), its typed result (Config),
// one setting from a flag's text (parseSetting), the schema for the docs (SETTINGS), and secrets' values.
export { readConfig, parseSetting, defaultConfig, settingError, SETTINGS, type Config, type ConfigResult, type ConfigWarning, type SettingError, type SettingKey } from "./config.ts";
export type { Command, SettingMeta } from "./setting.ts";
export { envSecrets, type SecretSource } from "./secrets.ts";
export * from "./settings/engine.ts";
