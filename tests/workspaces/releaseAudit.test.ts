// `caplo agent publish` records each release in its workspace's audit when it publishes it, with who (--by, else
// the operating system's user) and when, and the release published before; publishing unchanged content again
// records nothing; a store it cannot reach stops it before anything is published; and a server starting on the
// release records nothing of it (it changed nothing). The workspace's team member reads it through the team API.
// On SQLite and on PostgreSQL (a database of the test's own, as caplo serve and the CLI reach it by URL).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { runPublish } from "../../server/src/cli/agent.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { teamTokenHash } from "../../server/src/gateway/teamMembers.ts";
import { openStore } from "../../server/src/store/index.ts";
import { createTestDatabase, type TestDatabase } from "../support/testDatabase.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-release-audit-"));
const TOKEN = "ct_release-audit-ana-0123456789abcdefghijklmnop";
let database: TestDatabase | undefined;
beforeAll(async () => {
  database = await createTestDatabase("caplo_release_audit");
}, 60_000);
afterAll(async () => {
  await database?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const agentYaml = (instructions: string) => `apiVersion: v1\nkind: Agent\nname: help-desk\ninstructions: ${instructions}\norigins:\n  - https://acme.example\nchannels:\n  web: {}\n`;

describe.each(["sqlite", "postgres"] as const)("releases audited at publish (%s)", (kind) => {
  const db = () => (kind === "sqlite" ? join(dir, "sqlite", "caplo.db") : database!.url);
  const releasesDir = join(dir, `releases-${kind}`);
  const publish = async (instructions: string, by: string | undefined, at: string, location = db()) => {
    const file = join(dir, `agent-${kind}.yaml`);
    writeFileSync(file, agentYaml(instructions));
    const out: string[] = [];
    const code = await runPublish([file, "--store", releasesDir, "--workspace", "acme", "--db", location, ...(by ? ["--by", by] : [])], { out: (line) => out.push(line), err: (line) => out.push(line) }, {}, new Date(at));
    return { code, out: out.join("\n") };
  };
  const auditOf = async (workspaceId: string) => {
    const store = await openStore(db());
    try {
      return await store.listAudit(workspaceId, { limit: 1000 });
    } finally {
      await store.close();
    }
  };

  it("records who published which release and when, once per change of the latest, in the release's workspace", async () => {
    const first = await publish("Help Acme's customers.", "ana@ops", "2026-03-01T10:00:00Z");
    expect(first.code, first.out).toBe(0);
    expect(first.out).toMatch(/audit {5}release\.published by ana@ops in workspace acme$/m);
    const r1 = (await new FileReleaseStore(join(releasesDir, "@acme")).latest("help-desk"))!.id;
    const again = await publish("Help Acme's customers.", "ben@ops", "2026-03-01T11:00:00Z");
    expect(again.out).toMatch(/audit {5}already recorded/);
    const second = await publish("Help Acme's customers, briefly.", undefined, "2026-03-01T12:00:00Z");
    expect(second.code, second.out).toBe(0);
    const r2 = (await new FileReleaseStore(join(releasesDir, "@acme")).latest("help-desk"))!.id;
    expect(r2).not.toBe(r1);
    expect((await auditOf("acme")).map(({ action, target, actor, at, detail }) => ({ action, target, actor, at, detail }))).toEqual([
      { action: "release.published", target: "help-desk", actor: "ana@ops", at: Date.parse("2026-03-01T10:00:00Z"), detail: { release: r1 } },
      // Without --by: the operating system's user on this host.
      { action: "release.published", target: "help-desk", actor: expect.stringMatching(/^cli(:.+@.+)?$/), at: Date.parse("2026-03-01T12:00:00Z"), detail: { release: r2, previous: r1 } },
    ]);
    expect(await auditOf("default")).toEqual([]);
  });

  it("a store it cannot reach stops the publish before anything is published", async () => {
    const latest = (await new FileReleaseStore(join(releasesDir, "@acme")).latest("help-desk"))!.id;
    const unreachable = kind === "sqlite" ? join(dir, `not-a-folder-${kind}`, "x", "caplo.db") : "postgres://postgres:secret-pw@127.0.0.1:1/nowhere";
    if (kind === "sqlite") writeFileSync(join(dir, `not-a-folder-${kind}`), "a file, not a folder");
    const refused = await publish("A release never published.", "ana@ops", "2026-03-02T10:00:00Z", unreachable);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/^caplo agent publish: store_unavailable at --db: the store .* cannot be opened .*; nothing was published$/m);
    expect(refused.out).not.toContain("secret-pw");
    expect((await new FileReleaseStore(join(releasesDir, "@acme")).latest("help-desk"))!.id).toBe(latest);
  });

  it("a server starting on the release records nothing of it; the workspace's member reads the publishes through the team API", async () => {
    const before = await auditOf("acme");
    const parsed = parseServeArgs(["--port", "0", "--agent", "acme/help-desk", "--db", db(), "--releases", releasesDir], { CAPLO_TEAM_MEMBERS: `acme/ana=${teamTokenHash(TOKEN)}` });
    if (!parsed.ok) throw new Error(parsed.error.message);
    const started = await startServe(parsed.options, () => undefined);
    if (!started.ok) throw new Error(`${started.error.code}: ${started.error.message}`);
    try {
      const audit = (await (await fetch(`${started.server.url}/v1/team/audit`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { events: Array<{ action: string; target: string; actor: string; at: string }> };
      const published = audit.events.filter((event) => event.action.startsWith("release."));
      expect(published.map((event) => [event.action, event.target, event.actor, event.at])).toEqual(
        before.filter((entry) => entry.action.startsWith("release.")).map((entry) => [entry.action, entry.target, entry.actor, new Date(entry.at).toISOString()]),
      );
      expect(published).toHaveLength(2);
    } finally {
      await started.server.close();
    }
  });
});
