// verify and parse are pure: no platform SDK, no network, no file system. This reads their source.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const ALLOWED = [/^\.\.?\//, /^zod$/, /^node:crypto$/, /^@caplo\/shared(\/|$)/];

describe("verify and parse import no SDK", () => {
  for (const platform of ["whatsapp", "messenger", "instagram", "meta"]) {
    for (const file of ["verify.ts", "parse.ts"]) {
      it(`${platform}/${file} imports only relative modules, zod, node:crypto and @caplo/shared`, () => {
        const source = readFileSync(new URL(`./${platform}/${file}`, import.meta.url), "utf8");
        const imports = [...source.matchAll(/(?:^|\n)\s*(?:import|export)[^"']*?from\s+["']([^"']+)["']/g)].map((m) => m[1]!);
        expect(imports.length).toBeGreaterThan(0);
        for (const spec of imports) expect(ALLOWED.some((re) => re.test(spec)), `${platform}/${file} imports ${spec}`).toBe(true);
        expect(source).not.toMatch(/\btwilio\b["']/);
        expect(source).not.toMatch(/\bfetch\(/);
      });
    }
  }
});
