// "A change takes effect on the next call without a restart, on every node": two nodes (two engines, each with
// its own store connection and its own sandboxed runner keeping the package's process warm) on one PostgreSQL
// database; the operator sets, changes and removes a workspace secret with `caplo secret`, and the very next
// call on each node gets the new value (or none), from the same warm process, with no restart and no message
// between the nodes. Secrets are read from the store at each call: there is no per-node copy to go stale.
import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engineSecrets } from "../../server/src/app/server.ts";
import { run as secret } from "../../server/src/cli/secret.ts";
import { Engine } from "../../server/src/engine/engine.ts";
import { releaseFromVersions, StaticReleases } from "../../server/src/engine/release.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { readSecretKeys, WorkspaceSecrets } from "../../server/src/secrets/index.ts";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { WEB } from "../engine/support/harness.ts";
import { TEST_HOST, testVersion } from "../runner/testPackages.ts";
import { createTestDatabase, type TestDatabase } from "../support/testDatabase.ts";

const KEY = randomBytes(32).toString("base64");
const version = testVersion("secret-digest", [{ name: "digest", policy: { effect: "read", timeoutSeconds: 10 }, inputSchema: { type: "object", properties: {}, additionalProperties: false } }], {
  dir: join(import.meta.dirname, "packages", "secret-digest"),
  secrets: ["API_KEY"],
});
const release = releaseFromVersions({ agent: "probe", workspaceId: "acme", instructions: "Probe.", origins: ["https://acme.example"], versions: [version] });
const digest = (value: string) => createHash("sha256").update(value).digest("hex").slice(0, 16);

type Node = { store: PostgresStore; runner: CaploToolRunner; engine: Engine; conversation: string; owner: string };
let database: TestDatabase;
const nodes: Node[] = [];

beforeAll(async () => {
  database = await createTestDatabase("caplo_secrets_nodes");
  const keys = readSecretKeys({ CAPLO_SECRETS_KEY: KEY });
  if (!keys.ok) throw new Error(keys.error.message);
  for (const nodeId of ["node-a", "node-b"]) {
    const store = new PostgresStore({ connectionString: database.url });
    await store.migrate();
    const runner = new CaploToolRunner({ hostModule: TEST_HOST });
    const releases = [release];
    const engine = new Engine({
      store,
      runner,
      model: new ScriptedModel([{ when: "digest", replies: [{ toolCalls: [{ name: "secret_digest__digest", args: {} }] }, { text: "{{tool}}" }] }]),
      releases: new StaticReleases(releases),
      secrets: engineSecrets(releases, new WorkspaceSecrets({ store, keyring: keys.keyring })),
      nodeId,
    });
    await engine.start({ scheduler: false });
    const owner = `visitor-${nodeId}`;
    const conversation = (await engine.openConversation({ agent: "acme/probe", channel: "web", capabilities: WEB, ownerId: owner })).id;
    nodes.push({ store, runner, engine, conversation, owner });
  }
}, 120_000);
afterAll(async () => {
  for (const node of nodes) {
    await node.engine.stop();
    await node.runner.close();
    await node.store.close();
  }
  await database?.drop();
});

/** The operator's `caplo secret` on the same database (the value on standard input). */
async function operator(...args: string[]): Promise<void> {
  const [value, ...rest] = args[0] === "set" ? [args[2]!, ...args.slice(0, 2), ...args.slice(3)] : [undefined, ...args];
  const out: string[] = [];
  const code = await secret([...rest, "--workspace", "acme", "--db", database.url, "--by", "ops:test"], { CAPLO_SECRETS_KEY: KEY }, { out: (line) => void out.push(line), err: (line) => void out.push(line), stdin: async () => value ?? "" });
  expect(code, out.join("\n")).toBe(0);
}

/** One call of the tool on a node: what its process received (workspace, digest of API_KEY or none, pid). */
async function call(node: Node): Promise<{ workspace: string; digest: string; pid: string }> {
  const result = await node.engine.handle(node.conversation, node.owner, { type: "message", text: "digest" });
  expect(result).toEqual({ ok: true });
  await node.engine.idle();
  const events = await node.store.listEvents(node.conversation, 0);
  const reply = events.map((event) => event.message).filter((message) => message.type === "text" && message.from === "agent").at(-1);
  const [workspace, got, pid] = (reply?.type === "text" ? reply.text : "").split(":");
  return { workspace: workspace!, digest: got!, pid: pid! };
}

describe("a workspace secret changed on one database, called on two nodes", () => {
  it("the next call on every node gets the new value, without a restart, from the same warm process; removed, none", async () => {
    const [a, b] = nodes as [Node, Node];
    expect(await call(a)).toMatchObject({ workspace: "acme", digest: "none" });
    await operator("set", "API_KEY", "sk_first_value");
    const first = [await call(a), await call(b)];
    expect(first.map((seen) => seen.digest)).toEqual([digest("sk_first_value"), digest("sk_first_value")]);
    await operator("set", "API_KEY", "sk_second_value");
    const second = [await call(b), await call(a)];
    expect(second.map((seen) => seen.digest)).toEqual([digest("sk_second_value"), digest("sk_second_value")]);
    // The same processes answered: the value came with the call, not from a process started after the change.
    expect(second.map((seen) => seen.pid)).toEqual([first[1]!.pid, first[0]!.pid]);
    await operator("rm", "API_KEY");
    expect([(await call(a)).digest, (await call(b)).digest]).toEqual(["none", "none"]);
    // Never the value itself in what the model or the customer saw.
    for (const node of nodes) expect(JSON.stringify([await node.store.listEvents(node.conversation, 0), await node.store.listTranscript(node.conversation)])).not.toContain("sk_");
  }, 120_000);
});
