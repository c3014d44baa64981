// Builds console/dist (`npx vite build -c console/vite.config.ts`, the demo's build) unless it is newer than
// every source it uses; browser test files and the bench share one build.
import { fileURLToPath } from "node:url";
import { buildConsole as buildWithVite, consoleBuildStale } from "../../server/src/demo/viteBuilds.ts";
import { buildOnce } from "../support/buildOnce.ts";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export const buildConsole = (): Promise<void> => buildOnce(`${ROOT}console/.build-lock`, consoleBuildStale, () => buildWithVite(() => undefined));
