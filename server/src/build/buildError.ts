// The errors `caplo tool build` reports, each with a stable code, the caplo.yaml path it concerns, and
// a message for the tool author.
export const BUILD_ERROR_CODES = [
  "manifest_invalid",
  "tool_name_invalid",
  "policy_missing",
  "policy_unknown",
  "presentation_invalid",
  "entry_invalid",
] as const;
export type BuildErrorCode = (typeof BUILD_ERROR_CODES)[number];
export type BuildError = { code: BuildErrorCode; path: string; message: string };
