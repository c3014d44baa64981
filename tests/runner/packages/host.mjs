// Test host: serves a test package (its server.mjs exports createServer()) over stdio, as the SDK's
// host does for real packages. Lets the runner's tests use plain MCP SDK servers.
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
const dir = process.argv[2];
const { createServer } = await import(`${dir}/server.mjs`);
const server = await createServer();
await server.connect(new StdioServerTransport());
