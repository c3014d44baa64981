// `caplo member add|list|rm`: a workspace's team members kept in the server's store. A member added gets a
// new token, printed once (Caplo keeps only its SHA-256); every change is in the workspace's audit with who
// and when; a member removed loses their console sessions at once, on every node.
import { DEFAULT_WORKSPACE } from "@caplo/shared";
import { ManagedMembers } from "../members/index.ts";
import { openStore } from "../store/index.ts";
import { operatorConfig, parseOperatorArgs, type OperatorArgs } from "./operator.ts";

export const help = `caplo member add NAME [--workspace ID] [--db PATH|URL] [--by WHO]
caplo member list [--workspace ID] [--db PATH|URL]
caplo member rm NAME [--workspace ID] [--db PATH|URL] [--by WHO]

A workspace's team members, kept in the server's store: every node knows a change at its next request, with
no restart. They sit beside the members a node's CAPLO_TEAM_MEMBERS configures; a name is one member's in
its workspace (docs/operators/team-api.md).

  add NAME   make a new token for NAME and print it once: give it to the member (the team API's bearer token
             and the console's sign-in); Caplo keeps only its SHA-256
  list       the members, configured and added: name, where from, when added and by whom (never a token)
  rm NAME    remove a member added here; their console sessions end at once. A configured member is removed
             from CAPLO_TEAM_MEMBERS instead

  --workspace ID  the workspace (default: ${DEFAULT_WORKSPACE})
  --db PATH|URL   the store (CAPLO_DATABASE_URL, else CAPLO_DB, default .caplo/caplo.db)
  --by WHO        who is making the change, for the audit (default: cli:<user>@<host>)`;

type Io = { out: (line: string) => void; err: (line: string) => void };
type Parsed = OperatorArgs & { name?: string };

function parse(args: string[], env: Record<string, string | undefined>): { ok: true; value: Parsed } | { ok: false; message: string } {
  const parsed = parseOperatorArgs(args, env, ["add", "list", "rm"]);
  if (!parsed.ok) return parsed;
  const { sub, positional } = parsed.value;
  const wantsName = sub !== "list";
  if (wantsName && positional.length === 0) return { ok: false, message: `member_name_required: caplo member ${sub} NAME` };
  if (positional.length > (wantsName ? 1 : 0)) return { ok: false, message: `unexpected argument ${positional.at(-1)}` };
  return { ok: true, value: { ...parsed.value, ...(positional[0] !== undefined && { name: positional[0] }) } };
}

export async function run(args: string[], env: Record<string, string | undefined> = process.env, io: Io = { out: console.log, err: console.error }): Promise<number> {
  const parsed = parse(args, env);
  if (!parsed.ok) {
    io.err(`caplo member: ${parsed.message}\n\n${help}`);
    return 2;
  }
  const options = parsed.value;
  const config = operatorConfig("caplo member", env, io.err);
  if (!config) return 2;
  const store = await openStore(options.db, { synchronous: config.CAPLO_SQLITE_SYNCHRONOUS });
  try {
    const members = new ManagedMembers(store);
    const fail = (error: { code: string; path: string; message: string }) => (io.err(`caplo member: ${error.code} at ${error.path}: ${error.message}`), 1);
    const where = options.workspace === DEFAULT_WORKSPACE ? "" : ` --workspace ${options.workspace}`;
    if (options.sub === "add") {
      const added = await members.add(options.workspace, options.name!, options.by);
      if (!added.ok) return fail(added.error);
      io.out(`member ${options.name} added to workspace ${options.workspace}; every node accepts their token at its next request.`);
      io.out(`token (give it to ${options.name}; it is not shown again): ${added.value.token}`);
      return 0;
    }
    if (options.sub === "rm") {
      const removed = await members.remove(options.workspace, options.name!, options.by);
      if (!removed.ok) return fail(removed.error);
      io.out(`member ${options.name} removed from workspace ${options.workspace}: their token is refused on every node, ${removed.value.sessionsEnded} console session(s) ended`);
      return 0;
    }
    const listed = await members.list(options.workspace);
    if (!listed.ok) return fail(listed.error);
    if (listed.value.length === 0) io.out(`workspace ${options.workspace} has no members (add one: caplo member add NAME${where})`);
    else {
      const width = Math.max(4, ...listed.value.map((member) => member.name.length));
      io.out(`${"NAME".padEnd(width)}  FROM                ADDED                     BY`);
      for (const member of listed.value) {
        const from = member.source === "managed" ? "caplo member add" : "CAPLO_TEAM_MEMBERS";
        io.out(`${member.name.padEnd(width)}  ${from.padEnd(18)}  ${new Date(member.addedAt).toISOString().padEnd(24)}  ${member.addedBy ?? "(the nodes' configuration)"}`);
      }
    }
    return 0;
  } finally {
    await store.close();
  }
}
