// Runs this package over standard input and output, for MCP Inspector, Claude Desktop or any local MCP
// client. Secrets come from same-named environment variables here; on Caplo they never do.
import { serveStdio } from "@caplo/tools";
import tool from "./tool.ts";

await serveStdio(() => tool.createServer(), { secrets: ["SHOP_API_KEY", "SHOP_API_URL"] });
