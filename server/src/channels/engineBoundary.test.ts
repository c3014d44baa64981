// The engine never imports a channel adapter or the channel glue: it speaks channel-neutral events and is
// told each channel's capabilities. This reads the source of every engine, store and model module.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const SERVER = new URL("..", import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [join(dir, entry.name)] : [],
  );
}

describe("the engine and the adapters", () => {
  for (const folder of ["engine", "store", "model"]) {
    it(`server/src/${folder} imports no adapter, no platform SDK and no channel glue`, () => {
      const files = sources(join(SERVER, folder));
      expect(files.length).toBeGreaterThan(0);
      for (const file of files) {
        const imports = [...readFileSync(file, "utf8").matchAll(/(?:^|\n)\s*(?:import|export)[^"']*?from\s+["']([^"']+)["']/g)].map((m) => m[1]!);
        for (const spec of imports) {
          expect(/^@caplo\/adapters|^twilio($|\/)|\/channels\//.test(spec), `${file} imports ${spec}`).toBe(false);
        }
      }
    });
  }
});
