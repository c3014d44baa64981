// What the operator's commands (`caplo secret`, `caplo member`, `caplo agent publish`) share: the store they
// change (the same one `caplo serve` uses) and who is making the change, for the workspace's audit.
import { hostname, userInfo } from "node:os";

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
