// Console sessions on a real SQLite file: a session found by its cookie on another store instance (another
// node), ended after the idle expiry and at sign-out, its last use written at most every 30 s, a removed
// member's session refused, malformed cookies refused unread, and the sign-in limit per address per window.
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { teamMember } from "../gateway/teamMembers.ts";
import { TeamDirectory } from "../members/index.ts";
import { SqliteStore } from "../store/sqliteStore.ts";
import { ConsoleSessions, cookieValue, SIGN_IN_ATTEMPTS_MAX, SIGN_IN_WINDOW_MS } from "./sessions.ts";

const members = new TeamDirectory([teamMember("ana", "ana-token"), teamMember("ben", "ben-token")]);
let dir: string;
let store: SqliteStore;
let other: SqliteStore;
let now = 1_000_000;
const clock = () => now;
const request = (cookie: string) => ({ headers: { cookie } }) as unknown as IncomingMessage;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "caplo-sessions-"));
  store = new SqliteStore(join(dir, "caplo.db"));
  await store.migrate();
  other = new SqliteStore(join(dir, "caplo.db"));
});
afterAll(async () => {
  await store.close();
  await other.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("console sessions", () => {
  it("a member's token gives a session another node finds by its cookie; the store holds only the cookie's hash", async () => {
    const sessions = new ConsoleSessions(store, { now: clock });
    const signed = (await sessions.signIn("ana-token", members))!;
    expect(signed.session.member).toBe("ana");
    expect(signed.cookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(signed.session.idHash).not.toContain(signed.cookie);
    expect(await store.getConsoleSession(signed.cookie)).toBeUndefined();
    const found = await new ConsoleSessions(other, { now: clock }).fromRequest(request(`x=1; caplo_console=${signed.cookie}`), members);
    expect(found?.member.name).toBe("ana");
    expect(await sessions.signIn("nobody", members)).toBeUndefined();
  });

  it("ends after the idle expiry without a request, and a request within it keeps it going", async () => {
    const sessions = new ConsoleSessions(store, { now: clock, idleMs: 60_000 });
    const { cookie } = (await sessions.signIn("ben-token", members))!;
    now += 45_000;
    expect(await sessions.fromRequest(request(`caplo_console=${cookie}`), members)).toBeDefined(); // touched: 45 s ≥ 30 s
    now += 45_000; // 90 s after sign-in, 45 s after the last use
    expect(await sessions.fromRequest(request(`caplo_console=${cookie}`), members)).toBeDefined();
    now += 61_000;
    expect(await sessions.fromRequest(request(`caplo_console=${cookie}`), members)).toBeUndefined();
    now += 1;
    expect(await sessions.fromRequest(request(`caplo_console=${cookie}`), members)).toBeUndefined(); // deleted, not revived
  });

  it("sign-out ends it; a removed member's session is refused; malformed cookies are refused", async () => {
    const sessions = new ConsoleSessions(store, { now: clock });
    const signed = (await sessions.signIn("ana-token", members))!;
    const found = (await sessions.fromRequest(request(`caplo_console=${signed.cookie}`), members))!;
    await sessions.signOut(found.session);
    expect(await sessions.fromRequest(request(`caplo_console=${signed.cookie}`), members)).toBeUndefined();
    // A member no longer configured: the session is refused, and ended (not revived when they are back).
    const again = (await sessions.signIn("ana-token", members))!;
    expect(await sessions.fromRequest(request(`caplo_console=${again.cookie}`), new TeamDirectory([teamMember("ben", "ben-token")]))).toBeUndefined();
    expect(await sessions.fromRequest(request(`caplo_console=${again.cookie}`), members)).toBeUndefined();
    for (const cookie of ["", "caplo_console=", "caplo_console=short", `caplo_console=${"a".repeat(44)}`, `caplo_console=${"%".repeat(43)}`]) expect(await sessions.fromRequest(request(cookie), members)).toBeUndefined();
    expect(cookieValue("a=1; caplo_console=x ; b=2", "caplo_console")).toBe("x");
  });

  it("at most SIGN_IN_ATTEMPTS_MAX sign-ins per address per window, counted across nodes; another address is not held up; the window ends", async () => {
    const [a, b] = [new ConsoleSessions(store, { now: clock }), new ConsoleSessions(other, { now: clock })];
    // Half the attempts at each node: the store counts them together.
    for (let i = 0; i < SIGN_IN_ATTEMPTS_MAX; i++) expect((await (i % 2 ? a : b).attempt("203.0.113.1")).ok).toBe(true);
    expect(await a.attempt("203.0.113.1")).toEqual({ ok: false, retryAfterSeconds: 60 });
    now += 20_000;
    expect(await b.attempt("203.0.113.1")).toEqual({ ok: false, retryAfterSeconds: 40 });
    expect((await b.attempt("203.0.113.2")).ok).toBe(true);
    // The address is kept by its hash only.
    const raw = new Database(join(dir, "caplo.db"), { readonly: true });
    expect(JSON.stringify(raw.prepare("SELECT * FROM sign_in_attempts").all())).not.toContain("203.0.113");
    raw.close();
    now += SIGN_IN_WINDOW_MS - 20_000;
    expect((await a.attempt("203.0.113.1")).ok).toBe(true);
  });

  it("the cookie is HttpOnly, SameSite=Strict and Secure only over https", () => {
    expect(ConsoleSessions.cookie("v", true, 60)).toBe("caplo_console=v; Path=/; HttpOnly; SameSite=Strict; Max-Age=60; Secure");
    expect(ConsoleSessions.cookie("v", false, 60)).not.toContain("Secure");
  });
});
