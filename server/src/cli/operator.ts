// What the operator's commands (`caplo secret`, `caplo member`, `caplo agent publish`) share: the store they
// change (the same one `caplo serve` uses) and who is making the change, for the workspace's audit.
import { hostname, userInfo } from "node:os";
import { DEFAULT_WORKSPACE } from "@caplo/shared";
import { readConfig, type Config } from "../config/index.ts";

/** The store: --db, else CAPLO_DATABASE_URL, else CAPLO_DB, else .caplo/caplo.db (as `caplo serve`). */
export function storeLocation(flag: string | undefined, env: Record<string, string | undefined>): string {
  return flag ?? (env.CAPLO_DATABASE_URL || undefined) ?? (env.CAPLO_DB || ".caplo/caplo.db");
}

/** Who makes a change when --by does not say: `cli:<user>@<host>` of the operating system, else `cli`. */
export function operatorActor(by?: string): string {
  if (by !== undefined) return by;
  try {
    return `cli:${userInfo().username}@${hostname()}`;
  } catch {
    return "cli"; // no user name (a container's uid without a passwd entry)
  }
}

/** --by WHO: who the audit names, 1 to 200 printable characters. */
export const ACTOR_PATTERN = /^[\x21-\x7E][\x20-\x7E]{0,199}$/;

/** An operator command's words: its subcommand, the words after it, and where, in which store and by whom. */
export type OperatorArgs = { sub: string; positional: string[]; file?: string; workspace: string; db: string; by: string };

/**
 * `SUB [WORD...] [--workspace ID] [--db PATH|URL] [--by WHO]` (and --file where `file` is allowed). The words
 * are counted by the command (a word too many may be a secret's value: its own message says so).
 */
export function parseOperatorArgs(args: string[], env: Record<string, string | undefined>, subs: readonly string[], options: { file?: boolean } = {}): { ok: true; value: OperatorArgs } | { ok: false; message: string } {
  const [sub, ...rest] = args;
  if (!sub || !subs.includes(sub)) return { ok: false, message: `say ${subs.slice(0, -1).join(", ")} or ${subs.at(-1)}` };
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  const flag = options.file ? /^--(file|workspace|db|by)(?:=(.*))?$/ : /^--(workspace|db|by)(?:=(.*))?$/;
  for (let index = 0; index < rest.length; index++) {
    const arg = rest[index]!;
    const match = flag.exec(arg);
    if (match) {
      const value = match[2] ?? rest[++index];
      if (value === undefined) return { ok: false, message: `option_value_missing: ${arg} needs a value` };
      flags[match[1]!] = value;
    } else if (arg.startsWith("-")) return { ok: false, message: `option_unknown: ${arg}` };
    else positional.push(arg);
  }
  if (flags.by !== undefined && !ACTOR_PATTERN.test(flags.by)) return { ok: false, message: "actor_invalid: --by names who makes the change: 1 to 200 printable characters" };
  return {
    ok: true,
    value: { sub, positional, ...(flags.file !== undefined && { file: flags.file }), workspace: flags.workspace ?? DEFAULT_WORKSPACE, db: storeLocation(flags.db, env), by: operatorActor(flags.by) },
  };
}

/** The configuration an operator command reads, or undefined after printing its first problem. */
export function operatorConfig(command: string, env: Record<string, string | undefined>, err: (line: string) => void): Config | undefined {
  const read = readConfig(env);
  if (read.ok) return read.config;
  const first = read.errors[0]!;
  err(`${command}: ${first.code} at ${first.path}: ${first.message}`);
  return undefined;
}
