// Team members managed in the store (`caplo member add|list|rm`): a member added gets a new token, shown once
// and kept only as its SHA-256; every change is recorded in the workspace's audit, with who and when, in the
// transaction that makes it; a member removed loses their console sessions in that same transaction. Every
// node finds members in the store at each request (teamDirectory.ts), so a change holds at once everywhere.
import { createHash } from "node:crypto";
import { WORKSPACE_ID_PATTERN } from "@caplo/shared";
import type { AuditEvent, RecordedMember, Store } from "../store/store.ts";
import { newTeamToken, TEAM_MEMBER_PATTERN } from "../gateway/teamMembers.ts";

export type MembersError = { code: string; path: string; message: string };
type Result<T> = { ok: true; value: T } | { ok: false; error: MembersError };

/** A member as listed: never the token nor its hash. */
export type ListedMember = Omit<RecordedMember, "tokenSha256">;

export class ManagedMembers {
  private readonly store: Pick<Store, "ensureWorkspace" | "addTeamMember" | "removeTeamMember" | "listTeamMembers">;
  private readonly now: () => number;

  constructor(store: Pick<Store, "ensureWorkspace" | "addTeamMember" | "removeTeamMember" | "listTeamMembers">, now: () => number = Date.now) {
    this.store = store;
    this.now = now;
  }

  /** Add a member with a new token: the token is returned once (give it to the member); the store keeps its SHA-256. */
  async add(workspaceId: string, name: string, actor: string): Promise<Result<{ token: string; event: AuditEvent }>> {
    const refused = checkRef(workspaceId, name);
    if (refused) return { ok: false, error: refused };
    const token = newTeamToken();
    const at = this.now();
    await this.store.ensureWorkspace(workspaceId, at);
    const added = await this.store.addTeamMember({ workspaceId, name, tokenSha256: createHash("sha256").update(token, "utf8").digest("hex") }, actor, at);
    if (!added.ok) return { ok: false, error: { code: added.code, path: "name", message: `workspace ${workspaceId} already has a member ${name} (configured or added): remove them first (caplo member rm), or choose another name` } };
    return { ok: true, value: { token, event: added.event } };
  }

  /** Remove a managed member; their console sessions end with it. A configured member is removed from CAPLO_TEAM_MEMBERS instead. */
  async remove(workspaceId: string, name: string, actor: string): Promise<Result<{ sessionsEnded: number; event: AuditEvent }>> {
    const refused = checkRef(workspaceId, name);
    if (refused) return { ok: false, error: refused };
    const removed = await this.store.removeTeamMember(workspaceId, name, actor, this.now());
    if (removed.ok) return { ok: true, value: { sessionsEnded: removed.sessionsEnded, event: removed.event } };
    return {
      ok: false,
      error:
        removed.code === "member_configured"
          ? { code: removed.code, path: "name", message: `${name} is configured in CAPLO_TEAM_MEMBERS: remove the entry there and restart the nodes (caplo member rm removes members added with caplo member add)` }
          : { code: removed.code, path: "name", message: `workspace ${workspaceId} has no member ${name}` },
    };
  }

  /** A workspace's members, configured (as recorded at the last start) and managed, without tokens or hashes. */
  async list(workspaceId: string): Promise<Result<ListedMember[]>> {
    if (!WORKSPACE_ID_PATTERN.test(workspaceId)) return { ok: false, error: workspaceInvalid(workspaceId) };
    return { ok: true, value: (await this.store.listTeamMembers(workspaceId)).map(({ tokenSha256: _hash, ...listed }) => listed) };
  }
}

function workspaceInvalid(workspaceId: string): MembersError {
  return { code: "workspace_invalid", path: "workspace", message: `${JSON.stringify(workspaceId)} is not a workspace id: lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters` };
}

function checkRef(workspaceId: string, name: string): MembersError | undefined {
  if (!WORKSPACE_ID_PATTERN.test(workspaceId)) return workspaceInvalid(workspaceId);
  if (!TEAM_MEMBER_PATTERN.test(name)) return { code: "member_name_invalid", path: "name", message: `${JSON.stringify(name)} is not a member name: lowercase letters, digits, dots, dashes and underscores, starting with a letter, at most 40 characters` };
  return undefined;
}
