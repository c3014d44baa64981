// The team console's sessions: a member signs in once with their team token and gets a session cookie
// (HttpOnly, SameSite=Strict, Secure where the console is reached over https) instead of keeping the token in
// the page. Sessions live in the store (any node checks any session), by the SHA-256 of the cookie's random id
// (the database holds no usable cookie), and end after CONSOLE_IDLE_MS without a request, or at sign-out.
// Every change made with a session needs its CSRF token in a header and an Origin of this server's own.
// Sign-in attempts per client address are counted in the store too, so their limit holds across nodes.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { ConsoleSession, ConsoleSessionStore } from "../store/store.ts";
import type { TeamMember } from "../gateway/teamMembers.ts";
import type { TeamDirectory } from "../members/index.ts";
import { parseWorkspaceRef, workspaceRef } from "@caplo/shared";

/** A session ends after this long without a request (30 minutes). */
export const CONSOLE_IDLE_MS = 30 * 60 * 1000;
/** A session's last use is written at most this often (a console polling every 2 s writes twice a minute). */
const TOUCH_EVERY_MS = 30 * 1000;
/** Sign-in attempts per client address per window; more get 429 until the window ends. */
export const SIGN_IN_ATTEMPTS_MAX = 10;
export const SIGN_IN_WINDOW_MS = 60 * 1000;
export const CSRF_HEADER = "x-caplo-csrf";
const COOKIE = "caplo_console";

export type SessionMember = { member: TeamMember; session: ConsoleSession };

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The value of one cookie in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(sha256(a), "hex");
  const y = Buffer.from(sha256(b), "hex");
  return timingSafeEqual(x, y) && a.length === b.length;
}

export class ConsoleSessions {
  private readonly store: ConsoleSessionStore;
  private readonly options: { idleMs?: number; now?: () => number; servedHere?: (req: IncomingMessage) => boolean };

  /**
   * `servedHere`: whether a request reached the listener that serves the console (with CAPLO_CONSOLE_PORT, only
   * its own port's do): a session's cookie counts only there, and a sign-in is taken only there.
   */
  constructor(store: ConsoleSessionStore, options: { idleMs?: number; now?: () => number; servedHere?: (req: IncomingMessage) => boolean } = {}) {
    this.store = store;
    this.options = options;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Whether this request reached the console's listener (every request does, without a console port). */
  servedHere(req: IncomingMessage): boolean {
    return this.options.servedHere?.(req) ?? true;
  }

  get idleMs(): number {
    return this.options.idleMs ?? CONSOLE_IDLE_MS;
  }

  /**
   * Counts a sign-in attempt from an address; refused when it is over the limit (answer 429), with the seconds to
   * wait. The count is kept in the store (by the address's SHA-256), so the limit holds across every node.
   */
  async attempt(address: string): Promise<{ ok: true } | { ok: false; retryAfterSeconds: number }> {
    const now = this.now();
    const seen = await this.store.countSignInAttempt(sha256(address), now, SIGN_IN_WINDOW_MS);
    // Now and then, forget addresses whose window has ended.
    if (Math.random() < 0.05) await this.store.pruneSignInAttempts(now - SIGN_IN_WINDOW_MS);
    if (seen.count > SIGN_IN_ATTEMPTS_MAX) return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((seen.since + SIGN_IN_WINDOW_MS - now) / 1000)) };
    return { ok: true };
  }

  /** A new session for the member whose token this is, or undefined for a token of no member. */
  async signIn(token: string, team: TeamDirectory): Promise<{ cookie: string; session: ConsoleSession } | undefined> {
    const member = await team.authenticate(`Bearer ${token}`);
    if (!member) return undefined;
    const id = randomBytes(32).toString("base64url");
    const now = this.now();
    const session: ConsoleSession = { idHash: sha256(id), member: memberRef(member), csrf: randomBytes(24).toString("base64url"), createdAt: now, lastSeenAt: now };
    await this.store.createConsoleSession(session);
    // Now and then, forget sessions idle past their expiry.
    if (Math.random() < 0.05) await this.store.pruneConsoleSessions(now - this.idleMs);
    return { cookie: id, session };
  }

  /**
   * The live session a request's cookie names, with its member, marked used; else undefined. A session whose
   * member is no longer one (removed with caplo member rm, or from CAPLO_TEAM_MEMBERS) ends here.
   */
  async fromRequest(req: IncomingMessage, team: TeamDirectory): Promise<SessionMember | undefined> {
    if (!this.servedHere(req)) return undefined;
    const id = cookieValue(req.headers.cookie, COOKIE);
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
    const session = await this.store.getConsoleSession(sha256(id));
    if (!session) return undefined;
    const now = this.now();
    const idleSince = now - this.idleMs;
    if (session.lastSeenAt <= idleSince) {
      await this.store.deleteConsoleSession(session.idHash);
      return undefined;
    }
    if (now - session.lastSeenAt >= TOUCH_EVERY_MS && !(await this.store.touchConsoleSession(session.idHash, now, idleSince))) return undefined;
    const { workspaceId, name } = parseWorkspaceRef(session.member);
    const member = await team.find(workspaceId, name);
    if (!member) {
      await this.store.deleteConsoleSession(session.idHash);
      return undefined;
    }
    return { member, session };
  }

  async signOut(session: ConsoleSession): Promise<void> {
    await this.store.deleteConsoleSession(session.idHash);
  }

  /** The Set-Cookie header of a session (or of its end, with an empty value), Secure when reached over https. */
  static cookie(value: string, secure: boolean, maxAgeSeconds: number): string {
    return `${COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure ? "; Secure" : ""}`;
  }
}

/** How a session names its member: the name in the default workspace, else `workspace/name` (names are unique per workspace). */
export function memberRef(member: Pick<TeamMember, "name" | "workspaceId">): string {
  return workspaceRef(member.workspaceId, member.name);
}
