// serveStdio on Node 24 with the MCP SDK's own Client: the listed secrets come from same-named
// environment variables (local development), and any other variable stays out of reach.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, describe, expect, it } from "vitest";
import { node24Path } from "../../server/src/build/node24.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-stdio-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("serveStdio", () => {
  it("serves over stdio with the listed secrets read from the environment, and no others", async () => {
    mkdirSync(join(dir, "src"));
    const sdk = resolve(import.meta.dirname, "index.ts");
    writeFileSync(
      join(dir, "src", "stdio.ts"),
      [
        `import { defineTool, serveStdio } from ${JSON.stringify(sdk)};`,
        `const tool = defineTool({`,
        `  name: "which_secret", description: "Tells whether a secret is readable.",`,
        `  inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },`,
        `  handler: ({ name }, { secrets }) => (secrets.has(name) ? \`\${name} has \${secrets.get(name).length} characters\` : \`no \${name}\`),`,
        `});`,
        `await serveStdio(() => tool.createServer(), { secrets: ["SHOP_API_KEY"] });`,
      ].join("\n"),
    );
    const transport = new StdioClientTransport({
      command: node24Path()!,
      args: ["--disable-warning=ExperimentalWarning", "src/stdio.ts"],
      cwd: dir,
      env: { PATH: process.env.PATH ?? "", SHOP_API_KEY: "sk_local_123", OTHER_SECRET: "nope" },
      stderr: "pipe",
    });
    const client = new Client({ name: "inspector", version: "1" });
    await client.connect(transport);
    try {
      expect(await client.callTool({ name: "which_secret", arguments: { name: "SHOP_API_KEY" } })).toMatchObject({ content: [{ text: "SHOP_API_KEY has 12 characters" }] });
      expect(await client.callTool({ name: "which_secret", arguments: { name: "OTHER_SECRET" } })).toMatchObject({ content: [{ text: "no OTHER_SECRET" }] });
    } finally {
      await client.close();
    }
  });
});
