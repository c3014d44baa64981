// A gateway server in a process of its own, for the crash tests: `node tests/support/runBundled.mjs serverProcess.ts DIR`.
// Store and shop backend live in DIR, so a new process on the same DIR finds everything a killed one left.
import { join } from "node:path";
import { SHOP_RULES, SLOW_RULE, startStack } from "./stack.ts";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: serverProcess.ts DIR");
  process.exit(2);
}
const stack = await startStack({ dir, rules: [SLOW_RULE, ...SHOP_RULES], backendFile: join(dir, "backend.json"), statusCheckBaseMs: 300, checkPollMs: 100, nodeId: "crash-node" });
process.stdout.write(`${JSON.stringify({ port: new URL(stack.base).port })}\n`);
process.on("SIGTERM", () => {
  void stack.close().then(() => process.exit(0));
});
