// The build: validates tool packages and freezes them as immutable versions. Others use these exports only.
export { buildPackage } from "./buildPackage.ts";
export type { BuildOptions, BuildResult } from "./buildPackage.ts";
export type { BuildError, BuildErrorCode } from "./buildError.ts";
export { BUILD_ERROR_CODES } from "./buildError.ts";
export { contentHash } from "./contentHash.ts";
