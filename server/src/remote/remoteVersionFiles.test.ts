// Published remote versions kept as files (the CLI's --out folder and the console's workspace folder), and a
// review started again from a version: the same decisions publish the same version.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { keepRemoteVersion, readRemoteVersions } from "./remoteVersionFiles.ts";
import { mergeReview, newReview, type ListedTool } from "./remoteReview.ts";
import { publishRemote, reviewOfVersion } from "./remoteVersion.ts";

const LISTED: ListedTool[] = [
  { name: "lookup", description: "Look up", inputSchema: { type: "object", properties: { id: { type: "string" } } } },
  { name: "refund", description: "Refund", inputSchema: { type: "object", properties: { id: { type: "string" } } } },
  { name: "banner", description: "<b>hi</b>", inputSchema: { type: "object" } },
];

function published(at = new Date("2026-12-01T10:00:00Z")) {
  const review = newReview("crm", "https://crm.example/mcp", LISTED, "CRM_TOKEN", "streamable-http");
  review.tools[0]!.effect = "read";
  review.tools[1]!.effect = "write";
  review.tools[1]!.confirmation = "none";
  review.tools[1]!.timeoutSeconds = 5;
  const result = publishRemote(review, LISTED, at);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.version;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "caplo-remote-files-"));
  dirs.push(dir);
  return dir;
};

describe("remote version files", () => {
  it("keeps a version once: the same content published later is the file kept before, unchanged", async () => {
    const dir = join(tempDir(), "remote");
    const first = published();
    const file = keepRemoteVersion(dir, first);
    const text = readFileSync(file, "utf8");
    expect(keepRemoteVersion(dir, published(new Date("2026-12-02T10:00:00Z")))).toBe(file);
    expect(readFileSync(file, "utf8")).toBe(text);
    const read = await readRemoteVersions(dir);
    expect(read.versions.map((kept) => kept.version.id)).toEqual([first.id]);
    expect(read.problems).toEqual([]);
  });

  it("reads no versions from a folder that does not exist, and reports an altered file instead of serving it", async () => {
    const dir = tempDir();
    expect(await readRemoteVersions(join(dir, "missing"))).toEqual({ versions: [], problems: [] });
    const file = keepRemoteVersion(dir, published());
    const altered = JSON.parse(readFileSync(file, "utf8"));
    altered.tools[1].policy.confirmation = "required";
    writeFileSync(file, JSON.stringify(altered));
    const read = await readRemoteVersions(dir);
    expect(read.versions).toEqual([]);
    expect(read.problems).toEqual([expect.objectContaining({ code: "remote_version_altered" })]);
  });
});

describe("a review started again from a version", () => {
  it("keeps every decision, so an unchanged server publishes the same version", () => {
    const version = published();
    const { review } = mergeReview(reviewOfVersion(version), LISTED);
    expect(review.tools.map((tool) => [tool.name, tool.effect, tool.confirmation ?? null, tool.timeoutSeconds])).toEqual([
      ["lookup", "read", null, 10],
      ["refund", "write", "none", 5],
      ["banner", "unreviewed", null, 10],
    ]);
    const again = publishRemote(review, LISTED, new Date("2026-12-03T10:00:00Z"));
    expect(again.ok && again.version.id).toBe(version.id);
  });

  it("sends a tool whose description changed back to unreviewed, with what it was", () => {
    const changed = LISTED.map((tool) => (tool.name === "refund" ? { ...tool, description: "Refund and close the account" } : tool));
    const { review, changes } = mergeReview(reviewOfVersion(published()), changed);
    expect(changes.changed).toEqual(["refund"]);
    expect(review.tools.find((tool) => tool.name === "refund")).toMatchObject({ effect: "unreviewed", changed: "was write; its description or schemas changed on the server", description: "Refund and close the account" });
  });
});
