// The module Node 24 runs to serve one tool package over stdio: what the runner spawns in its sandbox and
// what `caplo tool build` starts to list a package's tools.
//
// Interface (keep stable):
//   node24 sdk/src/host.ts <packageDir>
//   - Reads <packageDir>/caplo.yaml, imports its `entry`: a function package's default export must be a
//     defineTool(); an MCP package must export createServer() returning the MCP SDK's Server or McpServer.
//   - Declared `secrets` are the only names ctx.secrets.get accepts; values come per call in
//     `_meta[CALL_META_KEY]` (never from the environment).
//   - Serves MCP over stdin/stdout (StdioServerTransport). stdout carries MCP frames only: console.log
//     and friends, and process.stdout.write, of the package are sent to stderr.
//   - `@caplo/tools`, `@caplo/shared`, `@modelcontextprotocol/sdk` and `zod` resolve from the package
//     first and, when it has none, from this repository (so `caplo tool init` packages work anywhere).
//   - On failure before serving, it writes one line `caplo-host-error {"code","message"}` to stderr and
//     exits: 2 manifest_invalid (caplo.yaml), 3 entry_invalid (missing entry, import failed, wrong export).
import { runHost } from "./hostServe.ts";

export { EXIT_ENTRY_INVALID, EXIT_MANIFEST_INVALID, HOST_ERROR_PREFIX } from "./hostServe.ts";

await runHost(process.argv[2]);
