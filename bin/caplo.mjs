#!/usr/bin/env node
// The `caplo` command. The CLI is TypeScript: in a checkout it runs from a bundle of its sources that is
// built on first use and again whenever a source changes (cliBundle.mjs), so there is no build step to
// forget; where that bundle cannot be had, it runs the sources through tsx.
import { cliModule } from "./cliBundle.mjs";

const bundle = await cliModule();
let main;
if (bundle) ({ main } = await import(bundle));
else {
  const { register } = await import("tsx/esm/api");
  register();
  ({ main } = await import("../server/src/cli/main.ts"));
}
process.exitCode = await main(process.argv.slice(2));
