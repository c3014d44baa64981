// The errors `caplo tool build` reports, each with a stable code, the caplo.yaml path it concerns, and
// a message for the tool author.
export const BUILD_ERROR_CODES = [
  "manifest_invalid",
  "tool_name_invalid",
  "policy_missing",
  "policy_unknown",
  "presentation_invalid",
  "entry_invalid",
  "status_invalid",
  "package_too_large",
  "version_altered",
  "version_missing",
  "sandbox_unavailable",
  "path_outside_package",
] as const;
/** What builds but may not work as the author means; `caplo tool build` prints them. */
export const BUILD_WARNING_CODES = ["file_not_shipped", "pending_needs_structured_content"] as const;
export type BuildErrorCode = (typeof BUILD_ERROR_CODES)[number] | (typeof BUILD_WARNING_CODES)[number];
export type BuildError = { code: BuildErrorCode; path: string; message: string };
