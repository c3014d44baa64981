// Builds PackageVersion records for the runner's test packages (tests/runner/packages/*), which are
// plain MCP SDK servers served by packages/host.mjs, so the runner can be tested without the build.
import { createHash } from "node:crypto";
import { join } from "node:path";
import type { BuiltTool, PackageVersion, ToolPolicy } from "@caplo/shared";
import { contentHash } from "../../server/src/build/contentHash.ts";

export const PACKAGES_DIR = join(import.meta.dirname, "packages");
export const TEST_HOST = join(PACKAGES_DIR, "host.mjs");

export type TestTool = {
  name: string;
  /** caplo.yaml policy fields of the tool (name added here). */
  policy: { effect: "read" | "write"; timeoutSeconds: number } & Record<string, unknown>;
  inputSchema?: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  hasStatus?: boolean;
};

export function testVersion(
  name: string,
  tools: TestTool[],
  options: { egress?: string[]; secrets?: string[]; effectOutcomes?: boolean; dir?: string } = {},
): PackageVersion {
  const dir = options.dir ?? join(PACKAGES_DIR, name);
  const hash = createHash("sha256").update(`${name}:${JSON.stringify(tools)}:${JSON.stringify(options)}`).digest("hex");
  const built: BuiltTool[] = tools.map((tool) => ({
    name: tool.name,
    modelName: `${name.replaceAll("-", "_")}__${tool.name}`,
    description: tool.name,
    inputSchema: tool.inputSchema ?? { type: "object" },
    ...(tool.outputSchema && { outputSchema: tool.outputSchema }),
    policy: { name: tool.name, ...tool.policy } as ToolPolicy,
    hasStatus: tool.hasStatus ?? false,
  }));
  return {
    id: `${name}@sha256:${hash}`,
    name,
    type: "mcp",
    // The runner loads a folder only if it holds exactly the version's files: the folder's real hash.
    // (The id stays unique per tools and options, so one folder can serve several test versions.)
    contentHash: contentHash(dir),
    dir,
    manifest: {
      apiVersion: "v1",
      kind: "ToolPackage",
      name,
      type: "mcp",
      entry: "server.mjs",
      runtime: "node24",
      tests: "tests/*.json",
      tools: built.map((tool) => tool.policy),
      ...(options.egress && { egress: options.egress }),
      ...(options.secrets && { secrets: options.secrets }),
    },
    effectOutcomes: options.effectOutcomes ?? false,
    tools: built,
    builtAt: new Date(0).toISOString(),
  };
}
