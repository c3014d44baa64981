// The runner's seam points one way: remote MCP servers are a kind of target the composition root registers
// (app/runnerSettings.ts), so nothing under server/src/runner imports server/src/remote (no import cycle).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const RUNNER = new URL(".", import.meta.url).pathname;

describe("the runner and remote targets", () => {
  it("no runner module imports a remote module", () => {
    const files = readdirSync(RUNNER).filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"));
    expect(files.length).toBeGreaterThan(10);
    for (const name of files) {
      const imports = [...readFileSync(join(RUNNER, name), "utf8").matchAll(/(?:^|\n)\s*(?:import|export)[^"']*?from\s+["']([^"']+)["']/g)].map((m) => m[1]!);
      for (const spec of imports) expect(/(^|\/)remote\//.test(spec), `${name} imports ${spec}`).toBe(false);
    }
  });
});
