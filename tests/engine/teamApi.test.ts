// The team API with a token per member, over real HTTP on a real SQLite file: the member a request acts as
// is the one whose token it presents, so one member cannot take over, write or release as another; a body
// that names a member is refused; a missing or unknown token gets 401 and changes nothing anywhere.
import { afterEach, describe, expect, it, vi } from "vitest";
import { run as teamTokenCommand } from "../../server/src/cli/team.ts";
import { parseServeArgs } from "../../server/src/cli/serve.ts";
import { authenticateMember, parseTeamMembers, teamMember, teamTokenHash } from "../../server/src/gateway/teamMembers.ts";
import { engineHarness, type Harness } from "./support/harness.ts";

const ANA = "ct_ana-token-0123456789abcdefghijklmnopqrstuv";
const BEN = "ct_ben-token-0123456789abcdefghijklmnopqrstuv";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(members = [teamMember("ana", ANA), teamMember("ben", BEN)]) {
  h = await engineHarness({ rules: [{ when: "hello", replies: [{ text: "Hi!" }] }], gateway: { teamMembers: members } });
  const base = `${h.base}/v1/team`;
  const call = (token: string | undefined, method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { ...(token !== undefined && { authorization: `Bearer ${token}` }), ...(body !== undefined && { "content-type": "application/json" }) },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
  return { h, base, call, id: h.conversation.id };
}

/** Everything the team API could change about a conversation. */
async function snapshot(harness: Harness, id: string) {
  return {
    conversation: await harness.store.getConversation(id),
    events: await harness.store.listEvents(id, 0),
    transcript: await harness.store.listTranscript(id),
  };
}

describe("team members authenticate individually", () => {
  it("the member is the token's: ana's takeover is recorded as ana's, and /me says who a token is", async () => {
    const { h, call, id } = await start();
    expect(await (await call(ANA, "GET", "/me")).json()).toEqual({ member: "ana", workspace: "default" });
    expect(await (await call(BEN, "GET", "/me")).json()).toEqual({ member: "ben", workspace: "default" });
    expect((await call(ANA, "POST", `/conversations/${id}/takeover`, {})).status).toBe(200);
    expect((await h.store.getConversation(id))?.handoff).toMatchObject({ state: "taken", member: "ana" });
    expect((await call(ANA, "POST", `/conversations/${id}/messages`, { text: "Ana here" })).status).toBe(200);
    expect((await h.ofType("text")).at(-1)).toMatchObject({ from: "team", text: "Ana here" });
  });

  it("ben, with his own valid token, cannot write in or release ana's conversation, nor take it from her", async () => {
    const { h, call, id } = await start();
    await call(ANA, "POST", `/conversations/${id}/takeover`, {});
    const before = await snapshot(h, id);
    const write = await call(BEN, "POST", `/conversations/${id}/messages`, { text: "I am Ana" });
    expect(write.status).toBe(409);
    expect(((await write.json()) as { error: { code: string } }).error.code).toBe("conversation_not_held");
    const release = await call(BEN, "POST", `/conversations/${id}/release`, {});
    expect(release.status).toBe(409);
    expect(((await release.json()) as { error: { code: string } }).error.code).toBe("conversation_held");
    expect((await call(BEN, "POST", `/conversations/${id}/takeover`, {})).status).toBe(409);
    expect(await snapshot(h, id)).toEqual(before);
  });

  it("a body that names a member is refused, whoever it names, and changes nothing", async () => {
    const { h, call, id } = await start();
    await call(ANA, "POST", `/conversations/${id}/takeover`, {});
    const before = await snapshot(h, id);
    for (const [path, body] of [
      [`/conversations/${id}/messages`, { member: "ana", text: "I am Ana" }],
      [`/conversations/${id}/release`, { member: "ana" }],
      [`/conversations/${id}/takeover`, { member: "ben" }],
    ] as const) {
      const response = await call(BEN, "POST", path, body);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: { code: "field_unknown", path: "member", message: "member comes from your token: leave it out (one member cannot act as another)" } });
    }
    expect(await snapshot(h, id)).toEqual(before);
  });

  it("no token, an unknown token, another scheme or a near miss: 401 with a challenge on every route, and nothing changes", async () => {
    const { h, call, base, id } = await start();
    await h.say("hello");
    const before = await snapshot(h, id);
    const routes: [string, string, unknown?][] = [
      ["GET", "/me"],
      ["GET", "/conversations"],
      ["GET", `/conversations/${id}/events`],
      ["GET", "/follow-ups"],
      ["POST", `/conversations/${id}/takeover`, {}],
      ["POST", `/conversations/${id}/messages`, { text: "hijack" }],
      ["POST", `/conversations/${id}/release`, {}],
    ];
    for (const [method, path, body] of routes) {
      for (const token of [undefined, "nope", `${ANA}x`, ANA.slice(0, -1), teamTokenHash(ANA)]) {
        const response = await call(token, method, path, body);
        expect(response.status, `${method} ${path} with ${token ?? "no token"}`).toBe(401);
        expect(response.headers.get("www-authenticate")).toBe('Bearer realm="caplo-team"');
        expect(((await response.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
      }
      const basic = await fetch(`${base}${path}`, { method, headers: { authorization: `Basic ${Buffer.from(`ana:${ANA}`).toString("base64")}` } });
      expect(basic.status).toBe(401);
    }
    expect(await snapshot(h, id)).toEqual(before);
  });

  it("without members the team API is off: 503 team_api_disabled, nothing read or changed", async () => {
    const { h, call, id } = await start([]);
    const before = await snapshot(h, id);
    const response = await call(ANA, "POST", `/conversations/${id}/takeover`, {});
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("team_api_disabled");
    expect(await snapshot(h, id)).toEqual(before);
  });
});

describe("configuring members", () => {
  it("CAPLO_TEAM_MEMBERS holds name=sha256:<hex> entries; a token is found by its hash alone", () => {
    const parsed = parseTeamMembers(`ana=${teamTokenHash(ANA)}, ben=${teamTokenHash(BEN)}`);
    if (!parsed.ok) throw new Error(parsed.error.message);
    expect(parsed.members.map((member) => member.name)).toEqual(["ana", "ben"]);
    expect(authenticateMember(`Bearer ${BEN}`, parsed.members)?.name).toBe("ben");
    expect(authenticateMember(`Bearer ${ANA} `, parsed.members)).toBeUndefined();
    expect(authenticateMember(`bearer ${ANA}`, parsed.members)).toBeUndefined();
    expect(parseTeamMembers(undefined)).toEqual({ ok: true, members: [] });
  });

  it("a plain token, a bad name, a repeated name or two members with one token are refused, and the error never repeats the value", () => {
    const cases: [string, RegExp][] = [
      [`ana=${ANA}`, /name=sha256:<64 lowercase hex digits>/],
      [`Ana=${teamTokenHash(ANA)}`, /a member name is lowercase letters/],
      [`ana=${teamTokenHash(ANA)},ana=${teamTokenHash(BEN)}`, /ana is listed twice/],
      [`ana=${teamTokenHash(ANA)},ben=${teamTokenHash(ANA)}`, /same token as another member/],
    ];
    for (const [text, message] of cases) {
      const parsed = parseTeamMembers(text);
      expect(parsed.ok).toBe(false);
      if (parsed.ok) continue;
      expect(parsed.error.code).toBe("team_members_invalid");
      expect(parsed.error.path).toMatch(/^CAPLO_TEAM_MEMBERS\[\d\]$/);
      expect(parsed.error.message).toMatch(message);
      expect(parsed.error.message).not.toContain(ANA);
    }
  });

  it("caplo serve reads CAPLO_TEAM_MEMBERS and refuses the old shared CAPLO_TEAM_TOKEN by name", () => {
    const ok = parseServeArgs(["--agent", "shop"], { CAPLO_TEAM_MEMBERS: `ana=${teamTokenHash(ANA)}` });
    expect(ok.ok && ok.options.teamMembers?.map((member) => member.name)).toEqual(["ana"]);
    expect(parseServeArgs(["--agent", "shop"], { CAPLO_TEAM_TOKEN: "shared" })).toMatchObject({ ok: false, error: { code: "team_token_replaced", path: "CAPLO_TEAM_TOKEN" } });
    expect(parseServeArgs(["--agent", "shop"], { CAPLO_TEAM_MEMBERS: "ana=plain" })).toMatchObject({ ok: false, error: { code: "team_members_invalid" } });
  });

  it("caplo team token NAME prints a fresh token and the entry holding only its hash", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: string) => void lines.push(line));
    try {
      expect(await teamTokenCommand(["ana"])).toBe(0);
      expect(await teamTokenCommand(["ana"])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    const tokens = lines.filter((line) => line.startsWith("token")).map((line) => line.split(": ").at(-1)!);
    const entries = lines.filter((line) => line.startsWith("CAPLO_TEAM_MEMBERS entry")).map((line) => line.split(": ").at(-1)!);
    expect(tokens[0]).toMatch(/^ct_[A-Za-z0-9_-]{43}$/);
    expect(tokens[0]).not.toBe(tokens[1]);
    expect(entries[0]).toBe(`ana=${teamTokenHash(tokens[0]!)}`);
    expect(entries[0]).not.toContain(tokens[0]);
    const parsed = parseTeamMembers(entries[0]);
    expect(parsed.ok && authenticateMember(`Bearer ${tokens[0]}`, parsed.members)?.name).toBe("ana");
  });
});
