// Every demo package builds with the real build (`caplo tool build`): its entry loads on Node 24, its
// tools join caplo.yaml, and every presentation path and role fits its schemas.
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseManifest, toolPolicies } from "@caplo/shared";
import { buildPackage, type BuildResult } from "../../server/src/build/index.ts";
import { DEMO_DIR, PACKAGES, manifestText } from "./harness.ts";

const results = new Map<string, BuildResult>();

describe("demo packages build", () => {
  beforeAll(async () => {
    // Two builds at a time (each lists its tools in a Node 24 process), with room for a busy machine.
    const queue = [...PACKAGES];
    const worker = async () => {
      for (let name = queue.shift(); name; name = queue.shift()) results.set(name, await buildPackage(join(DEMO_DIR, name), { timeoutMs: 60_000 }));
    };
    await Promise.all([worker(), worker()]);
  }, 300_000);

  for (const name of PACKAGES) {
    it(`${name} builds into a version with exactly the tools caplo.yaml names`, () => {
      const result = results.get(name)!;
      expect(result.ok ? [] : result.errors).toEqual([]);
      if (!result.ok) return;
      const parsed = parseManifest(manifestText(name));
      if (!parsed.ok) throw new Error("manifest invalid");
      const policies = toolPolicies(parsed.manifest, result.version.tools[0]!.name);
      expect(result.version.tools.map((tool) => tool.name).sort()).toEqual(policies.map((policy) => policy.name).sort());
      expect(result.version.contentHash).toMatch(/^[0-9a-f]{64}$/);
      for (const tool of result.version.tools) {
        expect(tool.modelName).toBe(`${name.replaceAll("-", "_")}__${tool.name}`);
        // Every write can be checked later: a status handler, or caplo/status on the MCP server.
        if (tool.policy.effect === "write") expect(tool.hasStatus, tool.name).toBe(true);
      }
    });
  }
});
