#!/usr/bin/env node
// The `caplo` command. The CLI is TypeScript run through tsx, so there is no build step to forget.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../server/src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
