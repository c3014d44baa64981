// `caplo secret set|list|rm|rotate-key`: a workspace's secrets in the server's store, sealed with the
// operator's key (CAPLO_SECRETS_KEY_FILE). A value comes from standard input or --file, never from the
// command line (where the shell history and the process list would keep it), and is never printed.
import { readFileSync } from "node:fs";
import { DEFAULT_WORKSPACE } from "@caplo/shared";
import { readSecretKeys, WorkspaceSecrets } from "../secrets/index.ts";
import { openStore } from "../store/index.ts";
import { operatorConfig, parseOperatorArgs, type OperatorArgs } from "./operator.ts";

export const help = `caplo secret set NAME [--file FILE] [--workspace ID] [--db PATH|URL] [--by WHO]
caplo secret list [--workspace ID] [--db PATH|URL]
caplo secret rm NAME [--workspace ID] [--db PATH|URL] [--by WHO]
caplo secret rotate-key [--db PATH|URL] [--by WHO]

Workspace secrets: the values tools declare in caplo.yaml \`secrets\` (and HS256 identity keys), kept in the
server's store sealed with AES-256-GCM under the operator's key (CAPLO_SECRETS_KEY_FILE, or CAPLO_SECRETS_KEY;
make one with: openssl rand -base64 32). Every server node reads them at each call: a change is used by the
next call, with no restart. Every change is recorded in the workspace's audit (who and when, never the value).

  set NAME     the value from standard input (one trailing newline dropped), or from --file FILE as it is;
               never from the command line. Each set makes the secret's next version.
  list         names, versions, when and by whom each was last set: never values
  rm NAME      remove the value (the version counts on if it is set again)
  rotate-key   seal every value of every workspace again under the key file's FIRST key, in one transaction.
               Rotation: put the new key first and the old one after it (one per line) on every node, restart
               them, run rotate-key, then remove the old key.

  --workspace ID  the workspace (default: ${DEFAULT_WORKSPACE}); CAPLO_SECRET_<NAME> still answers a name the
                  default workspace has no stored value for
  --db PATH|URL   the store (CAPLO_DATABASE_URL, else CAPLO_DB, default .caplo/caplo.db)
  --by WHO        who is making the change, for the audit (default: cli:<user>@<host>)`;

type Parsed = OperatorArgs & { name?: string };

function parse(args: string[], env: Record<string, string | undefined>): { ok: true; value: Parsed } | { ok: false; message: string } {
  const parsed = parseOperatorArgs(args, env, ["set", "list", "rm", "rotate-key"], { file: true });
  if (!parsed.ok) return parsed;
  const { sub, positional } = parsed.value;
  const wantsName = sub === "set" || sub === "rm";
  if (wantsName && positional.length === 0) return { ok: false, message: `secret_name_required: caplo secret ${sub} NAME` };
  // A second word after the name is almost certainly the value: refused, so it is not used (it is already
  // in the shell history; the message says to change it).
  if (positional.length > (wantsName ? 1 : 0)) {
    return { ok: false, message: sub === "set" ? "secret_value_in_argv: a value is never taken from the command line (the shell history and process list keep it); pipe it on standard input or use --file, and consider that value exposed" : `unexpected argument ${positional.at(-1)}` };
  }
  return { ok: true, value: { ...parsed.value, ...(positional[0] !== undefined && { name: positional[0] }) } };
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function run(args: string[], env: Record<string, string | undefined> = process.env, io: { out: (line: string) => void; err: (line: string) => void; stdin: () => Promise<string> } = { out: console.log, err: console.error, stdin: readStdin }): Promise<number> {
  const parsed = parse(args, env);
  if (!parsed.ok) {
    io.err(`caplo secret: ${parsed.message}\n\n${help}`);
    return 2;
  }
  const options = parsed.value;
  const config = operatorConfig("caplo secret", env, io.err);
  if (!config) return 2;
  const keys = readSecretKeys(config);
  if (!keys.ok) {
    io.err(`caplo secret: ${keys.error.code} at ${keys.error.path}: ${keys.error.message}`);
    return 2;
  }
  let value: string | undefined;
  if (options.sub === "set") {
    try {
      value = options.file !== undefined ? readFileSync(options.file, "utf8") : (await io.stdin()).replace(/\r?\n$/, "");
    } catch (error) {
      io.err(`caplo secret: secret_file_unreadable at --file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
      return 2;
    }
  }
  const store = await openStore(options.db, { synchronous: config.CAPLO_SQLITE_SYNCHRONOUS });
  try {
    const secrets = new WorkspaceSecrets({ store, keyring: keys.keyring });
    const fail = (error: { code: string; path: string; message: string }) => (io.err(`caplo secret: ${error.code} at ${error.path}: ${error.message}`), 1);
    switch (options.sub) {
      case "set": {
        const set = await secrets.set(options.workspace, options.name!, value!, options.by);
        if (!set.ok) return fail(set.error);
        io.out(`secret ${options.name} set in workspace ${options.workspace}: version ${set.value.version} (used by the next call on every node)`);
        return 0;
      }
      case "rm": {
        const removed = await secrets.remove(options.workspace, options.name!, options.by);
        if (!removed.ok) return fail(removed.error);
        io.out(`secret ${options.name} removed from workspace ${options.workspace}`);
        return 0;
      }
      case "list": {
        const listed = await secrets.list(options.workspace);
        if (!listed.ok) return fail(listed.error);
        if (listed.value.length === 0) io.out(`workspace ${options.workspace} has no stored secrets`);
        else {
          const width = Math.max(4, ...listed.value.map((secret) => secret.name.length));
          io.out(`${"NAME".padEnd(width)}  VERSION  UPDATED                   BY`);
          for (const secret of listed.value) io.out(`${secret.name.padEnd(width)}  ${String(secret.version).padEnd(7)}  ${new Date(secret.updatedAt).toISOString().padEnd(24)}  ${secret.updatedBy}`);
        }
        return 0;
      }
      default: {
        const rotated = await secrets.rotateKey(options.by);
        if (!rotated.ok) return fail(rotated.error);
        io.out(`${rotated.value.count} secret(s) sealed again with key ${rotated.value.keyId}; the older keys may now be removed from the key file`);
        return 0;
      }
    }
  } finally {
    await store.close();
  }
}
