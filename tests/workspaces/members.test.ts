// Team members managed with `caplo member` on two real gateways sharing one PostgreSQL database (two nodes): a
// member added is accepted by both at their next request, bearer and console alike; removed, their token is
// refused and their console session ended on both at once; each change is in the workspace's audit with who
// and when, read through the team API, and in no other workspace's. CAPLO_TEAM_MEMBERS still works beside
// them: a start records its configured members, and refuses a configured name that a managed member has.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { run as member } from "../../server/src/cli/member.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { teamMember, teamTokenHash } from "../../server/src/gateway/teamMembers.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { createTestDatabase, type TestDatabase } from "../support/testDatabase.ts";

const ANA = "ct_ana-configured-0123456789abcdefghijklmnopq";
let database: TestDatabase;
const nodes: Stack[] = [];
const dir = mkdtempSync(join(tmpdir(), "caplo-members-"));

beforeAll(async () => {
  database = await createTestDatabase("caplo_members");
  for (const nodeId of ["node-a", "node-b"]) nodes.push(await startStack({ nodeId, store: () => new PostgresStore({ connectionString: database.url }), gateway: { teamMembers: [teamMember("ana", ANA)] } }));
}, 60_000);
afterAll(async () => {
  for (const node of nodes) await node.close();
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function cli(...args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await member([...args, "--db", database.url], {}, { out: (line) => void lines.push(line), err: (line) => void lines.push(line) });
  return { code, out: lines.join("\n") };
}
const bearer = (node: Stack, token: string, path: string) => fetch(`${node.base}/v1/team${path}`, { headers: { authorization: `Bearer ${token}` } });
const withCookie = (node: Stack, cookie: string, path: string) => fetch(`${node.base}/v1/team${path}`, { headers: { cookie } });

describe("caplo member on two nodes", () => {
  it("a member added is known at once on both nodes; removed, their token and console session end at once on both; each change audited with who and when", async () => {
    const [a, b] = nodes as [Stack, Stack];
    const added = await cli("add", "mallory", "--workspace", "acme", "--by", "ops:ana");
    expect(added.code, added.out).toBe(0);
    const token = /token \(give it to mallory; it is not shown again\): (ct_\S+)$/m.exec(added.out)?.[1];
    expect(token).toBeDefined();
    expect((await cli("add", "nina", "--workspace", "acme", "--by", "ops:ana")).code).toBe(0);
    for (const node of [a, b]) expect(await (await bearer(node, token!, "/me")).json()).toEqual({ member: "mallory", workspace: "acme" });
    // A console session signed in on node b serves on node a too.
    const signIn = await fetch(`${b.base}/v1/team/session`, { method: "POST", headers: { "content-type": "application/json", origin: b.base }, body: JSON.stringify({ token }) });
    expect(signIn.status).toBe(200);
    const cookie = signIn.headers.get("set-cookie")!.split(";")[0]!;
    expect((await withCookie(a, cookie, "/session")).status).toBe(200);
    // Listed with where from and who added them, never a token.
    const listed = await cli("list", "--workspace", "acme");
    expect(listed.out).toMatch(/^mallory +caplo member add +\d{4}-\d\d-\d\dT[\d:.]+Z +ops:ana$/m);
    expect(listed.out).not.toContain(token!);
    expect(listed.out).not.toContain(teamTokenHash(token!).slice(7));

    const removed = await cli("rm", "mallory", "--workspace", "acme", "--by", "ops:ben");
    expect(removed.out).toBe("member mallory removed from workspace acme: their token is refused on every node, 1 console session(s) ended");
    for (const node of [a, b]) {
      expect((await bearer(node, token!, "/me")).status).toBe(401);
      expect((await withCookie(node, cookie, "/session")).status).toBe(401);
      expect((await withCookie(node, cookie, "/conversations")).status).toBe(401);
    }
    // The workspace's audit, through the team API, by another member of acme; the default workspace's has none of it.
    const ninaToken = await newToken("nina2");
    const audit = (await (await bearer(a, ninaToken, "/audit")).json()) as { events: Array<{ action: string; target: string; actor: string; at: string; detail?: Record<string, unknown> }> };
    expect(audit.events.map((event) => [event.action, event.target, event.actor, event.detail])).toEqual([
      ["member.added", "mallory", "ops:ana", { source: "managed" }],
      ["member.added", "nina", "ops:ana", { source: "managed" }],
      ["member.removed", "mallory", "ops:ben", { source: "managed", sessionsEnded: 1 }],
      ["member.added", "nina2", "ops:test", { source: "managed" }],
    ]);
    for (const event of audit.events) expect(Date.parse(event.at)).toBeGreaterThan(Date.now() - 120_000);
    const defaults = (await (await bearer(b, ANA, "/audit")).json()) as { events: unknown[] };
    expect(defaults.events).toEqual([]);
  });

  it("bad input is refused with its code and changes nothing", async () => {
    expect(await cli("add", "Bad Name")).toMatchObject({ code: 1, out: expect.stringMatching(/^caplo member: member_name_invalid at name: /) });
    expect(await cli("add", "ana", "extra")).toMatchObject({ code: 2, out: expect.stringMatching(/^caplo member: unexpected argument extra/) });
    expect((await cli("add", "nina", "--workspace", "acme")).out).toMatch(/^caplo member: member_exists at name: workspace acme already has a member nina/);
    expect((await cli("rm", "nobody", "--workspace", "acme")).out).toMatch(/^caplo member: member_not_found at name:/);
    expect((await cli("list", "--workspace", "Acme")).out).toMatch(/^caplo member: workspace_invalid at workspace:/);
    expect((await cli("add", "oscar", "--by", "")).out).toMatch(/actor_invalid/);
    expect((await cli("list")).out).toBe("workspace default has no members (add one: caplo member add NAME)");
  });
});

/** A member of acme added by the CLI, for reading acme's audit; their token. */
async function newToken(name: string): Promise<string> {
  const added = await cli("add", name, "--workspace", "acme", "--by", "ops:test");
  return /: (ct_\S+)$/m.exec(added.out)![1]!;
}

describe("configured and managed members together (caplo serve)", () => {
  it("a start records CAPLO_TEAM_MEMBERS beside the managed members, and stops with team_member_conflict when a configured name is a managed member's", async () => {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name: "desk", instructions: "Be brief.", origins: ["https://site.example"], channels: { web: {} } });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date());
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "releases")).put(release.release);
    const serve = (members: string) => {
      const parsed = parseServeArgs(["--port", "0", "--agent", "desk", "--db", database.url, "--releases", join(dir, "releases")], { CAPLO_TEAM_MEMBERS: members });
      if (!parsed.ok) throw new Error(parsed.error.message);
      return startServe(parsed.options, () => undefined);
    };
    const started = await serve(`cara=${teamTokenHash("ct_cara-token-0123456789abcdefghijklmnopqrstuv")}`);
    if (!started.ok) throw new Error(started.error.message);
    await started.server.close();
    const listed = await cli("list");
    expect(listed.out).toMatch(/^cara +CAPLO_TEAM_MEMBERS +\S+ +\(the nodes' configuration\)$/m);
    expect((await cli("add", "cara")).out).toMatch(/member_exists/);
    expect((await cli("rm", "cara")).out).toMatch(/^caplo member: member_configured at name: cara is configured in CAPLO_TEAM_MEMBERS/);
    expect((await cli("add", "dora", "--by", "ops:ana")).code).toBe(0);
    const refused = await serve(`cara=${teamTokenHash("ct_cara-token-0123456789abcdefghijklmnopqrstuv")},dora=${teamTokenHash("ct_dora-configured-0123456789abcdefghijklm")}`);
    expect(refused).toMatchObject({ ok: false, error: { code: "team_member_conflict", path: "CAPLO_TEAM_MEMBERS" } });
    if (!refused.ok) expect(refused.error.message).toMatch(/^dora is both in CAPLO_TEAM_MEMBERS and added with caplo member add/);
  }, 60_000);
});
