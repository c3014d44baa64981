// A secret never reaches the model or a log (tests/attacks/README.md), through the real `caplo serve`: the
// leaky package (built, sandboxed, its secret from CAPLO_SECRET_SHOP_API_KEY) answers a read with every
// accidental spelling of the secret, fails a read with it in the error, and refuses a confirmed write with it
// in its message. Then everything the run left is searched for every spelling: what caplo serve printed,
// every frame the visitor got, what the team API and the console's record show, and every byte of every
// file in the data folder (the SQLite database with the model's transcript, its WAL, the invocation log).
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAgentConfig, type ServerFrame } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { buildPackage } from "../../server/src/build/index.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import { TestClient } from "../gateway/support/client.ts";
import { SECRET, spellingsIn } from "./support/secretSpellings.ts";

const ORIGIN = "https://site.example";
const TEAM_TOKEN = "ct_attack-team-token-0123456789abcdef";
const dir = mkdtempSync(join(tmpdir(), "caplo-secrets-"));
const dataDir = join(dir, "data");
const printed: string[] = [];
let server: { url: string; close: () => Promise<void> } | undefined;
let frames: ServerFrame[] = [];
let conversationId = "";

beforeAll(async () => {
  // Built from a copy: the build writes .caplo/ beside the package, and sandbox.test.ts runs this folder as it is.
  const packageDir = join(dir, "leaky");
  cpSync(join(import.meta.dirname, "packages", "leaky"), packageDir, { recursive: true });
  const built = await buildPackage(packageDir);
  if (!built.ok) throw new Error(JSON.stringify(built.errors));
  const config = parseAgentConfig({
    apiVersion: "v1",
    kind: "Agent",
    name: "leaker",
    instructions: "Look things up.",
    origins: [ORIGIN],
    channels: { web: {} },
    tools: ["leaky/leak", "leaky/leak_throw", "leaky/leak_write"],
  });
  if (!config.ok) throw new Error(JSON.stringify(config.issues));
  const release = createRelease(config.agent, [built.version], new Date());
  if (!release.ok) throw new Error(JSON.stringify(release.issues));
  const releases = new FileReleaseStore(join(dir, "releases"));
  const kept = releases.keepVersions(release.release);
  if (kept) throw new Error(kept.message);
  await releases.put(release.release);
  const script = join(dir, "script.json");
  writeFileSync(
    script,
    JSON.stringify([
      { when: "read it", replies: [{ toolCalls: [{ name: "leaky__leak" }] }, { text: "Read done." }] },
      { when: "break it", replies: [{ toolCalls: [{ name: "leaky__leak_throw" }] }, { text: "That did not work." }] },
      { when: "change it", replies: [{ text: "Please confirm.", toolCalls: [{ name: "leaky__leak_write" }] }] },
      { whenNote: "outcome", replies: [{ text: "It was not changed." }] },
    ]),
  );
  const env = {
    CAPLO_SECRET_SHOP_API_KEY: SECRET,
    CAPLO_TEAM_MEMBERS: `ana=sha256:${createHash("sha256").update(TEAM_TOKEN).digest("hex")}`,
  };
  const parsed = parseServeArgs(["--port", "0", "--agent", "leaker", "--db", join(dataDir, "caplo.db"), "--releases", join(dir, "releases"), "--script", script], env);
  if (!parsed.ok) throw new Error(parsed.error.message);
  const started = await startServe(parsed.options, (line) => printed.push(line));
  if (!started.ok) throw new Error(started.error.message);
  server = started.server;

  const visitor = await TestClient.open(`${server.url.replace("http", "ws")}/v1/ws`, ORIGIN);
  const welcome = await visitor.hello("leaker");
  conversationId = welcome.conversationId;
  const agentSays = (text: string) => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent" && frame.message.text === text;
  visitor.send({ t: "in", ref: "1", event: { type: "message", text: "read it" } });
  await visitor.waitFor(agentSays("Read done."), 20_000);
  visitor.send({ t: "in", ref: "2", event: { type: "message", text: "break it" } });
  await visitor.waitFor(agentSays("That did not work."), 20_000);
  visitor.send({ t: "in", ref: "3", event: { type: "message", text: "change it" } });
  const review = await visitor.waitFor((frame) => frame.t === "event" && frame.message.type === "review", 20_000);
  visitor.send({ t: "in", ref: "4", event: { type: "confirm", proposalId: (review as { message: { proposalId: string } }).message.proposalId } });
  await visitor.waitFor((frame) => frame.t === "event" && frame.message.type === "outcome" && frame.message.state === "not_applied", 20_000);
  await visitor.waitFor(agentSays("It was not changed."), 20_000);
  frames = visitor.frames;
  await visitor.close();
}, 180_000);
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every file under a folder, with its bytes as text (latin1 keeps every byte, and the spellings are ASCII). */
function filesUnder(folder: string): Array<[string, string]> {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [[path, readFileSync(path).toString("latin1")] as [string, string]];
  });
}

describe("a secret the package mishandles, through caplo serve", () => {
  it("the package really used the secret: the model's text shows where it was, as [secret:SHOP_API_KEY]", async () => {
    const record = (await (await fetch(`${server!.url}/v1/team/conversations/${conversationId}/invocations`, { headers: { authorization: `Bearer ${TEAM_TOKEN}` } })).json()) as {
      invocations: Array<{ tool: string; logs: Array<{ message: string }> }>;
    };
    const leak = record.invocations.find((invocation) => invocation.tool === "leak");
    expect(leak?.logs.length).toBeGreaterThanOrEqual(7);
    expect(leak?.logs.every((line) => line.message.includes("[secret:SHOP_API_KEY]"))).toBe(true);
  });

  it("no spelling of it in the frames the visitor got", () => {
    expect(frames.some((frame) => frame.t === "event" && frame.message.type === "outcome")).toBe(true);
    expect(spellingsIn(JSON.stringify(frames))).toEqual([]);
  });

  it("no spelling of it in what the team API and the console's record show (events, writes, invocations with their log lines, follow-ups)", async () => {
    const get = async (path: string) => JSON.stringify(await (await fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${TEAM_TOKEN}` } })).json());
    for (const path of [`/v1/team/conversations/${conversationId}/events`, `/v1/team/conversations/${conversationId}/record`, `/v1/team/conversations/${conversationId}/invocations`, "/v1/team/follow-ups", "/v1/team/inbox"]) {
      const body = await get(path);
      expect(body.length, path).toBeGreaterThan(20);
      expect(spellingsIn(body), path).toEqual([]);
    }
  });

  it("no spelling of it in anything caplo serve printed", () => {
    expect(printed.length).toBeGreaterThan(0);
    expect(spellingsIn(printed.join("\n"))).toEqual([]);
  });

  it("no spelling of it in any byte of the data folder: the database (the model's transcript), its WAL, the invocation log", () => {
    const files = filesUnder(dataDir);
    expect(files.map(([path]) => path.slice(dataDir.length + 1)).sort()).toEqual(expect.arrayContaining(["caplo.db", "invocations.jsonl"]));
    const transcriptHasTheCall = files.some(([, bytes]) => bytes.includes("leaky__leak"));
    expect(transcriptHasTheCall).toBe(true);
    for (const [path, bytes] of files) expect(spellingsIn(bytes), path).toEqual([]);
  });
});
