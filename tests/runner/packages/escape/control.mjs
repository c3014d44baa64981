// The control: the same hostile code as server.mjs, run with plain Node 24 (no sandbox). argv[2] is a
// JSON list of [kind, args]; prints one JSON object kind → report. What gets through here and not in
// the sandbox is the sandbox's doing.
import { attacks, attempt } from "./server.mjs";
const out = {};
for (const [kind, args] of JSON.parse(process.argv[2])) out[kind] = await attempt(() => attacks[kind](args ?? {}));
process.stdout.write(JSON.stringify(out));
process.exit(0);
