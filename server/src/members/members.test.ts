// Team members on both stores, two store instances standing for two nodes: a member added (caplo member add)
// is found by their token's hash on the other node at once, listed without token or hash, removed with their
// console sessions; each change and its audit entry are one transaction; configured members (CAPLO_TEAM_MEMBERS,
// recorded at each start) and managed ones never share a name, and a start leaves managed members alone.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teamMember, teamTokenHash } from "../gateway/teamMembers.ts";
import type { Store } from "../store/index.ts";
import { eachStore } from "../store/testing/storeHarness.ts";
import { ManagedMembers } from "./managedMembers.ts";
import { TeamDirectory } from "./teamDirectory.ts";

const hex = (token: string) => teamTokenHash(token).slice("sha256:".length);
const session = (member: string, id: string) => ({ idHash: createHash("sha256").update(id).digest("hex"), member, csrf: "c", createdAt: 1, lastSeenAt: 1 });

describe.each(eachStore("caplo_members"))("team members ($name)", (harness) => {
  let node1: Store;
  let node2: Store;
  beforeAll(async () => {
    node1 = await harness.open();
    node2 = await harness.open();
  });
  afterAll(async () => {
    await node1?.close();
    await node2?.close();
    await harness.cleanup();
  });

  it("a member added on one node is known on the other at its next request; removed, their token and console sessions end there too", async () => {
    const ops = new ManagedMembers(node1, () => 1_000);
    const directory = new TeamDirectory([], node2);
    expect(await directory.any()).toBe(false);
    const added = await ops.add("acme", "mallory", "ops:ana");
    if (!added.ok) throw new Error(added.error.message);
    expect(added.value.token).toMatch(/^ct_[A-Za-z0-9_-]{43}$/);
    expect(await directory.any()).toBe(true);
    expect(await directory.authenticate(`Bearer ${added.value.token}`)).toEqual({ name: "mallory", workspaceId: "acme", tokenSha256: Buffer.from(hex(added.value.token), "hex") });
    expect(await directory.authenticate(`Bearer ${added.value.token}x`)).toBeUndefined();
    expect(await directory.find("acme", "mallory")).toMatchObject({ name: "mallory", workspaceId: "acme" });
    expect(await directory.find("default", "mallory")).toBeUndefined(); // names are per workspace
    // Listed without its token or hash.
    const listed = await ops.list("acme");
    expect(listed).toEqual({ ok: true, value: [{ workspaceId: "acme", name: "mallory", addedAt: 1_000, source: "managed", addedBy: "ops:ana" }] });
    expect(JSON.stringify(await harness.sql("SELECT * FROM team_members"))).not.toContain(added.value.token);
    // Her console sessions (on any node) end with her; another member's stays.
    await node2.createConsoleSession(session("acme/mallory", "s1"));
    await node1.createConsoleSession(session("acme/mallory", "s2"));
    await node1.createConsoleSession(session("mallory", "s3")); // the default workspace's mallory, another member
    const removed = await new ManagedMembers(node2, () => 2_000).remove("acme", "mallory", "ops:ben");
    expect(removed).toMatchObject({ ok: true, value: { sessionsEnded: 2 } });
    expect(await directory.authenticate(`Bearer ${added.value.token}`)).toBeUndefined();
    expect(await node1.getConsoleSession(session("acme/mallory", "s1").idHash)).toBeUndefined();
    expect(await node1.getConsoleSession(session("mallory", "s3").idHash)).toBeDefined();
    expect((await node1.listAudit("acme")).map(({ action, target, actor, at, detail }) => ({ action, target, actor, at, detail }))).toEqual([
      { action: "member.added", target: "mallory", actor: "ops:ana", at: 1_000, detail: { source: "managed" } },
      { action: "member.removed", target: "mallory", actor: "ops:ben", at: 2_000, detail: { source: "managed", sessionsEnded: 2 } },
    ]);
    expect(JSON.stringify(await node1.listAudit("acme"))).not.toContain(hex(added.value.token));
  });

  it("refuses a taken name, a bad name or workspace, and a member it does not have, with codes; nothing changes", async () => {
    const ops = new ManagedMembers(node1);
    expect((await ops.add("acme", "nina", "ops")).ok).toBe(true);
    expect(await ops.add("acme", "nina", "ops")).toMatchObject({ ok: false, error: { code: "member_exists", path: "name" } });
    expect((await ops.add("globex", "nina", "ops")).ok).toBe(true); // another workspace's nina
    expect(await ops.add("acme", "Nina!", "ops")).toMatchObject({ ok: false, error: { code: "member_name_invalid" } });
    expect(await ops.add("Acme", "nina", "ops")).toMatchObject({ ok: false, error: { code: "workspace_invalid" } });
    expect(await ops.remove("acme", "nobody", "ops")).toMatchObject({ ok: false, error: { code: "member_not_found" } });
    const listed = await ops.list("acme");
    expect(listed.ok && listed.value.map((member) => member.name)).toEqual(["nina"]);
  });

  it("a change and its audit entry are one transaction: an entry the database refuses leaves the members as they were", async () => {
    const ops = new ManagedMembers(node1);
    const directory = new TeamDirectory([], node1);
    await harness.sql(harness.name === "sqlite" ? "CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events BEGIN SELECT RAISE(ABORT, 'audit refused'); END" : "CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'audit refused'; END $$; CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()");
    try {
      await expect(ops.add("acme", "oscar", "ops")).rejects.toThrow(/audit refused/);
      await expect(ops.remove("acme", "nina", "ops")).rejects.toThrow(/audit refused/);
    } finally {
      await harness.sql(harness.name === "sqlite" ? "DROP TRIGGER refuse_audit" : "DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()");
    }
    expect(await directory.find("acme", "oscar")).toBeUndefined();
    expect(await directory.find("acme", "nina")).toBeDefined();
  });

  it("configured members are recorded at each start with what changed audited once; their sessions end when removed or given another token; managed members are left alone and never share a name with them", async () => {
    const hash = (n: number) => String(n).repeat(64).slice(0, 64);
    const synced = async (store: Store, members: { name: string; tokenSha256: string }[], actor: string) => {
      const result = await store.syncTeamMembers("team", members, actor, 1);
      if (!result.ok) throw new Error(result.conflicts.join());
      return result.events.map((event) => [event.action, event.target, event.detail?.source]);
    };
    await new ManagedMembers(node1).add("team", "dora", "ops");
    expect(await synced(node1, [{ name: "ana", tokenSha256: hash(1) }, { name: "ben", tokenSha256: hash(2) }], "node:a")).toEqual([["member.added", "ana", "config"], ["member.added", "ben", "config"]]);
    expect(await synced(node2, [{ name: "ana", tokenSha256: hash(1) }, { name: "ben", tokenSha256: hash(2) }], "node:b")).toEqual([]);
    await node1.createConsoleSession(session("team/ana", "ana-1"));
    await node1.createConsoleSession(session("team/ben", "ben-1"));
    await node1.createConsoleSession(session("team/dora", "dora-1"));
    expect(await synced(node2, [{ name: "ana", tokenSha256: hash(3) }], "node:b")).toEqual([["member.token_changed", "ana", "config"], ["member.removed", "ben", "config"]]);
    for (const [id, member, kept] of [["ana-1", "team/ana", false], ["ben-1", "team/ben", false], ["dora-1", "team/dora", true]] as const) {
      expect(Boolean(await node1.getConsoleSession(session(member, id).idHash)), id).toBe(kept);
    }
    const names = async () => (await node1.listTeamMembers("team")).map((member) => [member.name, member.source]);
    expect(await names()).toEqual([["ana", "config"], ["dora", "managed"]]);
    // A configured name that is a managed member's: refused, nothing recorded.
    expect(await node1.syncTeamMembers("team", [{ name: "ana", tokenSha256: hash(3) }, { name: "dora", tokenSha256: hash(4) }], "node:a", 2)).toEqual({ ok: false, conflicts: ["dora"] });
    expect(await names()).toEqual([["ana", "config"], ["dora", "managed"]]);
    // caplo member refuses a configured name, and to remove a configured member.
    expect(await new ManagedMembers(node2).add("team", "ana", "ops")).toMatchObject({ ok: false, error: { code: "member_exists" } });
    expect(await new ManagedMembers(node2).remove("team", "ana", "ops")).toMatchObject({ ok: false, error: { code: "member_configured" } });
    // A configured member is found in this node's configuration, never by the store's record of it.
    expect(await new TeamDirectory([], node1).find("team", "ana")).toBeUndefined();
    expect(await new TeamDirectory([teamMember("ana", "ana-token", "team")], node1).authenticate("Bearer ana-token")).toMatchObject({ name: "ana", workspaceId: "team" });
  });
});
