// Runs the package over stdio for any local MCP client (MCP Inspector, Claude Desktop): `node src/stdio.ts`.
import { serveStdio } from "@caplo/tools";
import tool from "./tool.ts";

await serveStdio(() => tool.createServer(), { secrets: ["SHOP_API_KEY"] });
