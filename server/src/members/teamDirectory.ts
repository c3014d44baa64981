// Who the team's members are, as the team API and the console find them at each request: the members this
// node's CAPLO_TEAM_MEMBERS configures (in memory, compared in constant time), then the members managed in the
// store (`caplo member add`), found by their token's SHA-256, so a member added or removed on any node is
// known to every node at its next request. A configured name and a managed one never coincide in a workspace
// (the store refuses either at its turn), so a reference names one member.
import { createHash } from "node:crypto";
import type { RecordedMember, TeamMemberPort } from "../store/store.ts";
import { authenticateMember, presentedToken, type TeamMember } from "../gateway/teamMembers.ts";

const fromRecord = (recorded: RecordedMember): TeamMember => ({ name: recorded.name, workspaceId: recorded.workspaceId, tokenSha256: Buffer.from(recorded.tokenSha256, "hex") });

export class TeamDirectory {
  private readonly configured: readonly TeamMember[];
  private readonly store: TeamMemberPort | undefined;

  constructor(configured: readonly TeamMember[], store?: TeamMemberPort) {
    this.configured = configured;
    this.store = store;
  }

  /** The member whose token the Authorization header presents, configured or managed; undefined for none. */
  async authenticate(header: string | undefined): Promise<TeamMember | undefined> {
    const configured = authenticateMember(header, this.configured);
    if (configured || !this.store) return configured;
    const presented = presentedToken(header);
    if (!presented) return undefined;
    // Looked up by the SHA-256 of the token: an index lookup that the presenter cannot steer byte by byte.
    const recorded = await this.store.findTeamMemberByToken(createHash("sha256").update(presented, "utf8").digest("hex"));
    return recorded ? fromRecord(recorded) : undefined;
  }

  /** A member by workspace and name (a console session's member), if they are still a member. */
  async find(workspaceId: string, name: string): Promise<TeamMember | undefined> {
    const configured = this.configured.find((member) => member.workspaceId === workspaceId && member.name === name);
    if (configured || !this.store) return configured;
    const recorded = await this.store.getTeamMember(workspaceId, name);
    return recorded ? fromRecord(recorded) : undefined;
  }

  /** Whether the team has any member at all (without one the team API answers 503 team_api_disabled). */
  async any(): Promise<boolean> {
    return this.configured.length > 0 || ((await this.store?.hasManagedMembers()) ?? false);
  }
}
