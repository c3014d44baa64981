// A release cannot pin another workspace's tool version, attacked through a real server start: the default
// workspace publishes `shop` with a package (its frozen copy kept in RELEASES/versions/); a release of acme
// made to pin that very version (valid, hash-checked, put in RELEASES/@acme/) stops `caplo serve` with
// version_not_in_workspace before it listens, while the same agent published by acme itself (its own frozen
// copy in RELEASES/@acme/versions/) is served.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, sep } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore, workspaceReleasesDir } from "../../server/src/agents/releaseStore.ts";
import { checkChannels } from "../../server/src/app/serveChannels.ts";
import { runPublish } from "../../server/src/cli/agent.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";

const ROOT = resolve(import.meta.dirname, "..", "..");
const dir = mkdtempSync(join(tmpdir(), "caplo-release-pins-"));
const releasesDir = join(dir, "releases");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const AGENT = { apiVersion: "v1", kind: "Agent", name: "shop", instructions: "Help.", origins: ["https://shop.example"], channels: { web: {} }, tools: ["order-lookup/get_order"] };

async function publish(workspace?: string): Promise<void> {
  const file = join(dir, "agent.yaml");
  writeFileSync(file, JSON.stringify(AGENT));
  const out: string[] = [];
  const code = await runPublish([file, "--packages", join(ROOT, "examples", "seed", "order-lookup"), "--store", releasesDir, "--db", join(dir, "caplo.db"), ...(workspace ? ["--workspace", workspace] : [])], { out: (line) => void out.push(line), err: (line) => void out.push(line) }, {});
  expect(code, out.join("\n")).toBe(0);
}

const serve = async (...agents: string[]) => {
  const parsed = parseServeArgs(["--port", "0", "--host", "127.0.0.1", ...agents.flatMap((agent) => ["--agent", agent]), "--db", join(dir, "caplo.db"), "--releases", releasesDir], {});
  if (!parsed.ok) throw new Error(parsed.error.message);
  const lines: string[] = [];
  const started = await startServe(parsed.options, (line) => void lines.push(line));
  if (started.ok) await started.server.close();
  return { started, lines };
};

describe("a release cannot pin another workspace's tool version", () => {
  it("acme's release pinning the default workspace's frozen version stops the start; acme's own publish is served", async () => {
    await publish();
    const ours = await new FileReleaseStore(releasesDir).latest("shop");
    const pinned = new FileReleaseStore(releasesDir).withKeptVersions(ours!).packages[0]!;
    expect(resolve(pinned.dir).startsWith(resolve(releasesDir, "versions") + sep)).toBe(true);
    // The attack: a well-formed release of acme whose pin is that version, kept in the default workspace's folder.
    const config = parseAgentConfig(AGENT);
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const forged = createRelease(config.agent, [pinned], new Date());
    if (!forged.ok) throw new Error(JSON.stringify(forged.issues));
    await new FileReleaseStore(workspaceReleasesDir(releasesDir, "acme")).put(forged.release);
    const refused = await serve("shop", "acme/shop");
    expect(refused.started).toMatchObject({ ok: false, error: { code: "version_not_in_workspace", path: "acme/shop" } });
    if (!refused.started.ok) expect(refused.started.error.message).toContain(`pins ${pinned.id}, whose frozen copy is not kept in workspace acme's releases`);
    expect(refused.lines.some((line) => line.startsWith("caplo serve: http"))).toBe(false);
    // caplo serve --check-channels reads the releases as the start does: refused with the same code.
    const check = parseServeArgs(["--check-channels", "--agent", "shop", "--agent", "acme/shop", "--releases", releasesDir], {});
    if (!check.ok) throw new Error(check.error.message);
    const out: string[] = [];
    expect(await checkChannels(check.options, (line) => void out.push(line))).toBe(1);
    expect(out).toEqual([`caplo serve --check-channels: version_not_in_workspace at acme/shop: ${refused.started.ok ? "" : refused.started.error.message}`]);
    // acme publishes the same agent and package itself: its own frozen copy, and the server starts.
    await publish("acme");
    const own = new FileReleaseStore(workspaceReleasesDir(releasesDir, "acme"));
    const kept = own.withKeptVersions((await own.latest("shop"))!).packages[0]!;
    expect(resolve(kept.dir).startsWith(resolve(releasesDir, "@acme", "versions") + sep)).toBe(true);
    const served = await serve("shop", "acme/shop");
    expect(served.started.ok ? "started" : served.started.error).toBe("started");
  }, 120_000);
});
