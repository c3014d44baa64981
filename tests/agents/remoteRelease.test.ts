// Publishing an agent that uses a remote MCP server version (offline: the version is published from a
// listing, no server needed): the release pins the version like a package version, is stored and read
// back verified, publishing again changes nothing, and a version file altered after publishing or a
// tool the review left out is refused with its code.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Release } from "@caplo/shared";
import { FileReleaseStore, verifyRelease } from "../../server/src/agents/index.ts";
import { runPublish } from "../../server/src/cli/agent.ts";
import { newReview, publishRemote, remotePackageVersion, type ListedTool } from "../../server/src/remote/index.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-remote-release-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const LISTED: ListedTool[] = [
  { name: "find_customer", description: "Find a customer", inputSchema: { type: "object", properties: { email: { type: "string" } }, required: ["email"] } },
  { name: "close_account", description: "Close an account", inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] } },
  { name: "export_all", description: "Export everything", inputSchema: { type: "object", properties: {} } },
];

function versionFile(): { file: string; id: string } {
  const review = newReview("crm", "https://crm.example/mcp", LISTED, "CRM_TOKEN", "sse");
  review.tools = review.tools.map((tool) =>
    tool.name === "find_customer" ? { ...tool, effect: "read" as const } : tool.name === "close_account" ? { ...tool, effect: "write" as const, timeoutSeconds: 20 } : tool,
  );
  const published = publishRemote(review, LISTED, new Date("2026-03-01T09:00:00Z"), { effectOutcomes: true, operationStatus: false });
  if (!published.ok) throw new Error(JSON.stringify(published.errors));
  const file = join(dir, "crm.json");
  writeFileSync(file, JSON.stringify(published.version, null, 2));
  return { file, id: published.version.id };
}

async function publish(tools: string[], file: string) {
  const agent = join(dir, "agent.yaml");
  writeFileSync(agent, `apiVersion: v1\nkind: Agent\nname: crm-agent\ninstructions: Help.\ntools:\n${tools.map((tool) => `  - ${tool}\n`).join("")}origins:\n  - https://crm.example\nchannels:\n  web: {}\n`);
  const out: string[] = [];
  const err: string[] = [];
  const code = await runPublish([agent, "--packages", file, "--store", join(dir, "releases")], { out: (line) => out.push(line), err: (line) => err.push(line) }, { CAPLO_DB: join(dir, "publish.db") }, new Date("2026-03-01T10:00:00Z"));
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("an agent release with a remote version", () => {
  it("pins the version, is stored and read back verified, and publishing again creates nothing", async () => {
    const { file, id } = versionFile();
    const first = await publish(["crm/find_customer", "crm/close_account"], file);
    expect(first).toMatchObject({ code: 0, err: "" });
    expect(first.out).toContain(`    ${id}`);
    expect(first.out).toMatch(/crm__close_account\s+write, confirmation required, 20s/);
    const store = new FileReleaseStore(join(dir, "releases"));
    const release = (await store.latest("crm-agent")) as Release;
    expect(verifyRelease(release)).toBe(true);
    expect(release.packages).toEqual([JSON.parse(JSON.stringify(remotePackageVersion(JSON.parse(readFileSync(file, "utf8")), file)))]);
    expect(release.tools.map((tool) => [tool.ref, tool.packageVersionId, tool.policy.effect, tool.hasStatus])).toEqual([
      ["crm/find_customer", id, "read", false],
      ["crm/close_account", id, "write", false],
    ]);
    const again = await publish(["crm/find_customer", "crm/close_account"], file);
    expect(again.out).toContain("Unchanged (already published; now the latest)");
  });

  it("a tool the review left unreviewed does not exist for the agent", async () => {
    const { file } = versionFile();
    const result = await publish(["crm/export_all"], file);
    expect(result.code).toBe(1);
    expect(result.err).toContain("has no tool export_all (its tools: close_account, find_customer) [tool_unknown]");
  });

  it("a version file changed after publishing (another URL) is refused", async () => {
    const { file } = versionFile();
    writeFileSync(file, readFileSync(file, "utf8").replace("https://crm.example/mcp", "https://evil.example/mcp"));
    const result = await publish(["crm/find_customer"], file);
    expect(result.code).toBe(1);
    expect(result.err).toContain("[remote_version_altered]");
  });
});
