// The widget walkthrough of issue #17: every state a visitor meets, shot in Chromium through the real
// gateway on a desktop (1280x800) and a phone (390x844), light and dark, with axe and the heading outline
// checked in each. Look at the PNGs; the index lists each with its problems.
//
//   npx tsx tests/widget/walkthrough/run.ts                      every variant, every part
//   npx tsx tests/widget/walkthrough/run.ts desktop-light demo   one variant, one part (demo, embed, stack)
//
// Shots: tests/artifacts/walkthrough/<variant>/<part>-NN-<state>.png, index.md beside them. Exits 1 when
// a step failed, axe found a serious or critical violation, or a heading skipped a level.
import { rmSync } from "node:fs";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, CHROMIUM_PATH } from "../../support/services.ts";
import { freePort, spawnDemo, waitForUrl } from "../../demo/demoProcess.ts";
import { demoTour } from "./demoTour.ts";
import { ELSEWHERE, embedTour } from "./embedTour.ts";
import { Shooter, VARIANTS, WALK_ARTIFACTS, writeIndex, type Shot } from "./shooter.ts";
import { stackTour } from "./stackTour.ts";

const [onlyVariant, onlyPart] = process.argv.slice(2);
const variants = VARIANTS.filter((variant) => !onlyVariant || onlyVariant === "all" || variant.name === onlyVariant);
const parts = ["demo", "embed", "stack"].filter((part) => !onlyPart || part === onlyPart);
if (variants.length === 0) throw new Error(`no variant ${onlyVariant}: ${VARIANTS.map((v) => v.name).join(", ")}`);

if (!onlyVariant) rmSync(WALK_ARTIFACTS, { recursive: true, force: true });
// A browser of its own: it maps a second host name to this machine, for a page on an origin no agent lists.
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${ELSEWHERE} 127.0.0.1`] });
const shots: Shot[] = [];
const failures: string[] = [];
try {
  for (const variant of variants) {
    console.log(`${variant.name}:`);
    if (parts.includes("demo") || parts.includes("embed")) {
      // A fresh demo for each variant: every order's cancel answers as docs/demo-shop.md says.
      const demo = spawnDemo(["--port", String(await freePort()), "--shop-port", "0", "--pending-ms", "8000", "--status-check-ms", "4000"]);
      try {
        const url = await waitForUrl(demo);
        for (const [part, tour] of [["demo", demoTour], ["embed", embedTour]] as const) {
          if (!parts.includes(part)) continue;
          const shooter = new Shooter(variant, part);
          await tour(browser, url, shooter, failures);
          shots.push(...shooter.shots);
        }
      } finally {
        await demo.stop();
      }
    }
    if (parts.includes("stack")) {
      const shooter = new Shooter(variant, "stack");
      await stackTour(browser, shooter, failures);
      shots.push(...shooter.shots);
    }
  }
} finally {
  await browser.close();
}
const index = writeIndex(shots);
const problems = shots.filter((shot) => shot.axe.length > 0 || shot.skips.length > 0);
console.log(`\n${shots.length} shots, index: ${index}`);
for (const shot of problems) console.log(`PROBLEM ${shot.file}: ${[...shot.axe, ...shot.skips].join("; ")}`);
for (const failure of failures) console.log(`FAILED ${failure}`);
process.exitCode = problems.length > 0 || failures.length > 0 ? 1 : 0;
