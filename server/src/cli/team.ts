// `caplo team token NAME`: make a team member's API token. Prints the token once (give it to the member)
// and the CAPLO_TEAM_MEMBERS entry holding only its SHA-256 (give that to the server).
import { newTeamToken, TEAM_MEMBER_PATTERN, teamTokenHash } from "../gateway/teamMembers.ts";

export const help = `caplo team token NAME

Makes a new API token for team member NAME (lowercase letters, digits, dots, dashes and underscores,
starting with a letter, at most 40 characters) and prints:
  - the token: give it to the member only; it is shown once and Caplo never stores it;
  - the entry for the server's CAPLO_TEAM_MEMBERS (comma-separated entries): NAME=sha256:<hex>.
The team API knows the member by the token alone (docs/operators/team-api.md).`;

export async function run(args: string[]): Promise<number> {
  const [name, ...extra] = args;
  if (!name || extra.length > 0) {
    console.error(`caplo team token: give exactly one member name\n\n${help}`);
    return 2;
  }
  if (!TEAM_MEMBER_PATTERN.test(name)) {
    console.error("caplo team token: member_name_invalid: lowercase letters, digits, dots, dashes and underscores, starting with a letter, at most 40 characters");
    return 2;
  }
  const token = newTeamToken();
  console.log(`token (give it to ${name}; it is not shown again): ${token}`);
  console.log(`CAPLO_TEAM_MEMBERS entry: ${name}=${teamTokenHash(token)}`);
  return 0;
}
