// Team members of the team API, each with a token of their own. The operator configures members as
// `name=sha256:<hex>` (the SHA-256 of the member's token; Caplo never holds the token itself), and a
// request's member is the one whose token it presents: never a name in the request body.
// A member belongs to one workspace: `acme/ana=sha256:<hex>` is ana of workspace acme, `ana=...` ana of the
// default workspace; names are unique within a workspace, tokens across the server.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { DEFAULT_WORKSPACE, WORKSPACE_ID_PATTERN } from "@caplo/shared";

/** A member name as it appears in the conversation's handoff record and the team's messages. */
export const TEAM_MEMBER_PATTERN = /^[a-z][a-z0-9._-]{0,39}$/;
export const TEAM_MEMBERS_MAX = 200;

export type TeamMember = { name: string; workspaceId: string; tokenSha256: Buffer };
export type TeamMembersError = { code: string; path: string; message: string };

/** `sha256:<hex>` of a token: what the operator puts in CAPLO_TEAM_MEMBERS. */
export function teamTokenHash(token: string): string {
  return `sha256:${createHash("sha256").update(token, "utf8").digest("hex")}`;
}

/** A new team member's token: `ct_` and 32 random bytes (base64url). Shown once; only its SHA-256 is kept. */
export function newTeamToken(): string {
  return `ct_${randomBytes(32).toString("base64url")}`;
}

/** The token an Authorization header presents (`Bearer <1 to 512 printable characters>`), or undefined. */
export function presentedToken(header: string | undefined): string | undefined {
  return /^Bearer ([\x21-\x7E]{1,512})$/.exec(header ?? "")?.[1];
}

/** CAPLO_TEAM_MEMBERS: `ana=sha256:<64 hex>,ben=sha256:<64 hex>`. Names and hashes must each be unique. */
export function parseTeamMembers(text: string | undefined, path = "CAPLO_TEAM_MEMBERS"): { ok: true; members: TeamMember[] } | { ok: false; error: TeamMembersError } {
  const members: TeamMember[] = [];
  const entries = (text ?? "").split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length > TEAM_MEMBERS_MAX) return { ok: false, error: { code: "team_members_invalid", path, message: `at most ${TEAM_MEMBERS_MAX} members` } };
  for (const [index, entry] of entries.entries()) {
    const match = /^(?:([^=/]+)\/)?([^=/]+)=sha256:([0-9a-f]{64})$/.exec(entry);
    const at = `${path}[${index}]`;
    if (!match) return { ok: false, error: { code: "team_members_invalid", path: at, message: "each member is [workspace/]name=sha256:<64 lowercase hex digits> (the SHA-256 of the member's token, never the token)" } };
    const [, workspace, name, hex] = match as unknown as [string, string | undefined, string, string];
    const workspaceId = workspace ?? DEFAULT_WORKSPACE;
    if (!WORKSPACE_ID_PATTERN.test(workspaceId)) return { ok: false, error: { code: "team_members_invalid", path: at, message: `${workspaceId}: a workspace id is lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters` } };
    if (!TEAM_MEMBER_PATTERN.test(name)) return { ok: false, error: { code: "team_members_invalid", path: at, message: `${name}: a member name is lowercase letters, digits, dots, dashes and underscores, starting with a letter, at most 40 characters` } };
    if (members.some((member) => member.name === name && member.workspaceId === workspaceId)) return { ok: false, error: { code: "team_members_invalid", path: at, message: `${workspace ? `${workspaceId}/` : ""}${name} is listed twice` } };
    const tokenSha256 = Buffer.from(hex, "hex");
    if (members.some((member) => member.tokenSha256.equals(tokenSha256))) return { ok: false, error: { code: "team_members_invalid", path: at, message: `${name} has the same token as another member: each member needs a token of their own` } };
    members.push({ name, workspaceId, tokenSha256 });
  }
  return { ok: true, members };
}

/**
 * The member whose token the Authorization header presents, or undefined. Every member's hash is compared
 * (in constant time), so the time taken says nothing about which member, if any, nearly matched.
 */
export function authenticateMember(header: string | undefined, members: readonly TeamMember[]): TeamMember | undefined {
  const presented = presentedToken(header);
  if (!presented) return undefined;
  const digest = createHash("sha256").update(presented, "utf8").digest();
  let found: TeamMember | undefined;
  for (const member of members) if (timingSafeEqual(digest, member.tokenSha256) && !found) found = member;
  return found;
}

/** A member from a name and a token (tests, and operators building the list in code); default workspace unless given. */
export function teamMember(name: string, token: string, workspaceId: string = DEFAULT_WORKSPACE): TeamMember {
  return { name, workspaceId, tokenSha256: Buffer.from(teamTokenHash(token).slice("sha256:".length), "hex") };
}
