// The console's remote review on `caplo serve` itself (what app/server.ts wires): a member of workspace acme
// lists a loopback MCP server (the operator's CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK=1) and publishes a reviewed
// tool; the version is kept in acme's `remote/` folder beside its releases, and that file is what
// `caplo agent publish --packages` takes: the next release of acme's agent pins the remote version.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { runPublish } from "../../server/src/cli/agent.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { teamTokenHash } from "../../server/src/gateway/teamMembers.ts";
import { listenOnLoopback, serveStreamable, type LoopbackServer } from "../runner/support/mcpServer.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-remote-serve-"));
const TOKEN = "ct_remote-serve-ana-0123456789abcdefghijklmnop";
const releasesDir = join(dir, "releases");
let mcp: LoopbackServer;

beforeAll(async () => {
  mcp = await listenOnLoopback(async (req, res) => {
    const server = new McpServer({ name: "crm", version: "1.0.0" });
    server.registerTool("lookup_order", { description: "Look up an order", inputSchema: { orderId: z.string() } }, async ({ orderId }) => ({ content: [{ type: "text" as const, text: orderId }] }));
    await serveStreamable(server, req, res);
  });
});
afterAll(async () => {
  await mcp?.close();
  rmSync(dir, { recursive: true, force: true });
});

const agentYaml = (tools: string[]) => `apiVersion: v1\nkind: Agent\nname: help-desk\ninstructions: Help.\norigins:\n  - https://acme.example\nchannels:\n  web: {}\n${tools.length ? `tools:\n${tools.map((tool) => `  - ${tool}\n`).join("")}` : ""}`;
async function publishAgent(tools: string[], packages: string[]) {
  const file = join(dir, "agent.yaml");
  writeFileSync(file, agentYaml(tools));
  const out: string[] = [];
  const code = await runPublish([file, "--store", releasesDir, "--workspace", "acme", "--db", join(dir, "caplo.db"), "--by", "ops", ...packages.flatMap((pkg) => ["--packages", pkg])], { out: (line) => out.push(line), err: (line) => out.push(line) }, {});
  return { code, out: out.join("\n") };
}

it("caplo serve's console publishes a reviewed remote version into the workspace's folder, and caplo agent publish pins that file", async () => {
  expect(await publishAgent([], [])).toMatchObject({ code: 0 });
  const parsed = parseServeArgs(["--port", "0", "--agent", "acme/help-desk", "--db", join(dir, "caplo.db"), "--releases", releasesDir], { CAPLO_TEAM_MEMBERS: `acme/ana=${teamTokenHash(TOKEN)}`, CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK: "1" });
  if (!parsed.ok) throw new Error(parsed.error.message);
  const started = await startServe(parsed.options, () => undefined);
  if (!started.ok) throw new Error(`${started.error.code}: ${started.error.message}`);
  let fileName: string;
  try {
    const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    const listed = (await (await fetch(`${started.server.url}/v1/team/remote/list`, { method: "POST", headers, body: JSON.stringify({ url: mcp.url, name: "crm" }) })).json()) as { review: { tools: { effect: string }[] } };
    listed.review.tools[0]!.effect = "read";
    const publish = await fetch(`${started.server.url}/v1/team/remote/publish`, { method: "POST", headers, body: JSON.stringify({ review: listed.review }) });
    expect(publish.status).toBe(201);
    const published = (await publish.json()) as { version: { id: string; publishedBy: string }; fileName: string };
    expect(published.version.publishedBy).toBe("ana");
    fileName = published.fileName;
    expect(readdirSync(join(releasesDir, "@acme", "remote"))).toEqual([fileName]);
  } finally {
    await started.server.close();
  }
  const pinned = await publishAgent(["crm/lookup_order"], [join(releasesDir, "@acme", "remote", fileName)]);
  expect(pinned.code, pinned.out).toBe(0);
  const release = (await new FileReleaseStore(join(releasesDir, "@acme")).latest("help-desk"))!;
  expect(release.packages.map((pkg) => pkg.id)).toEqual([expect.stringMatching(/^remote:crm@sha256:[0-9a-f]{64}$/)]);
  expect(release.tools.map((tool) => [tool.ref, tool.policy.effect])).toEqual([["crm/lookup_order", "read"]]);
}, 120_000);
