// Names are unique within a workspace, not across the server (#15 item 1): the same member name in two
// workspaces is two members, each with their own token, each seeing only their own workspace (the other's
// conversation is 404); a name taken in a workspace is refused there (member_exists); the same secret name in
// two workspaces holds two values, and a tool call in each gets its own workspace's.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run as member } from "../../server/src/cli/member.ts";
import { releaseFromVersions } from "../../server/src/engine/release.ts";
import { readSecretKeys, WorkspaceSecrets } from "../../server/src/secrets/index.ts";
import { WEB } from "../engine/support/harness.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";

let dir: string;
let stack: Stack;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "caplo-names-"));
  stack = await startStack({
    dir,
    releases: (version) => [
      releaseFromVersions({ agent: "shop-agent", instructions: "Default shop.", origins: ["https://default.example"], versions: [version] }),
      releaseFromVersions({ agent: "shop-agent", workspaceId: "acme", instructions: "Acme shop.", origins: ["https://acme.example"], versions: [version] }),
    ],
    gateway: { teamMembers: [] },
  });
}, 60_000);
afterAll(async () => {
  await stack?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await member([...args, "--db", join(dir, "caplo.db"), "--by", "ops:test"], {}, { out: (line) => void lines.push(line), err: (line) => void lines.push(line) });
  return { code, out: lines.join("\n") };
}
const tokenOf = (out: string) => /(ct_\S+)$/m.exec(out)![1]!;
const team = (token: string, path: string) => fetch(`${stack.base}/v1/team${path}`, { headers: { authorization: `Bearer ${token}` } });

describe("names are unique within a workspace", () => {
  it("ana of default and ana of acme are two members, each with their own token and workspace; a second ana in acme is refused", async () => {
    const ours = await cli("add", "ana");
    const theirs = await cli("add", "ana", "--workspace", "acme");
    expect([ours.code, theirs.code]).toEqual([0, 0]);
    const [defaultAna, acmeAna] = [tokenOf(ours.out), tokenOf(theirs.out)];
    expect(defaultAna).not.toBe(acmeAna);
    expect(await (await team(defaultAna, "/me")).json()).toEqual({ member: "ana", workspace: "default" });
    expect(await (await team(acmeAna, "/me")).json()).toEqual({ member: "ana", workspace: "acme" });
    expect((await cli("add", "ana", "--workspace", "acme")).out).toMatch(/^caplo member: member_exists at name: workspace acme already has a member ana/);
    // The same name does not carry a workspace's conversations over to the other's member.
    const acmeConversation = (await stack.engine.openConversation({ agent: "acme/shop-agent", channel: "web", capabilities: WEB, ownerId: "visitor-a" })).id;
    expect((await team(acmeAna, `/conversations/${acmeConversation}/events`)).status).toBe(200);
    const foreign = await team(defaultAna, `/conversations/${acmeConversation}/events`);
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toEqual({ error: { code: "conversation_not_found", path: "id", message: "no such conversation" } });
    // Removing acme's ana leaves default's ana signed in.
    expect((await cli("rm", "ana", "--workspace", "acme")).code).toBe(0);
    expect([(await team(acmeAna, "/me")).status, (await team(defaultAna, "/me")).status]).toEqual([401, 200]);
  });

  it("the same secret name in two workspaces holds two values, each read only in its own workspace", async () => {
    const keys = readSecretKeys({ CAPLO_SECRETS_KEY: randomBytes(32).toString("base64") });
    if (!keys.ok) throw new Error(keys.error.message);
    const secrets = new WorkspaceSecrets({ store: stack.store, keyring: keys.keyring, env: {} });
    await secrets.set("default", "SHOP_API_KEY", "default-value", "cli:test");
    await secrets.set("acme", "SHOP_API_KEY", "acme-value", "cli:test");
    expect(await secrets.values("default", ["SHOP_API_KEY"])).toEqual({ SHOP_API_KEY: "default-value" });
    expect(await secrets.values("acme", ["SHOP_API_KEY"])).toEqual({ SHOP_API_KEY: "acme-value" });
    await secrets.remove("acme", "SHOP_API_KEY", "cli:test");
    // Gone from acme: acme gets nothing, never the default workspace's value of the same name.
    expect(await secrets.values("acme", ["SHOP_API_KEY"])).toEqual({});
    expect(await secrets.values("default", ["SHOP_API_KEY"])).toEqual({ SHOP_API_KEY: "default-value" });
  });
});
