// The build: validates tool packages and freezes them as immutable versions. Others use these exports only.
export { buildPackage, localVersionsDir } from "./buildPackage.ts";
export type { BuildOptions, BuildResult } from "./buildPackage.ts";
export type { BuildError, BuildErrorCode } from "./buildError.ts";
export { BUILD_ERROR_CODES, BUILD_WARNING_CODES } from "./buildError.ts";
export { contentHash, shippedFiles } from "./contentHash.ts";
export { checkFrozen, freezePackage, frozenDir, keepFrozen, type Frozen, type FrozenProblem } from "./frozenVersion.ts";
