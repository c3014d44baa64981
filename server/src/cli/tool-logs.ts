// `caplo tool logs [INVOCATION_ID]`: shows the log lines kept with an invocation (or lists the recent
// invocations): those `caplo tool test` leaves in DIR/.caplo/invocations.jsonl, or those `caplo serve` keeps
// for every customer's call (--db, resolved as serve resolves it).
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { JsonlLogStore, invocationLogSettings, type InvocationRecord } from "../runner/logStore.ts";
import { terminalText } from "../eval/report.ts";

export const help = `Usage: caplo tool logs [INVOCATION_ID] [--dir DIR | --db PATH|URL | --file FILE]
                       [--conversation ID] [--key IDEMPOTENCY_KEY] [--limit N]

Without an id: lists the most recent invocations (default 20), oldest first. With an id: prints its
record and log lines (secret values are redacted before anything is kept).

Where from (one of):
  --dir DIR       DIR/.caplo/invocations.jsonl, written by \`caplo tool test DIR\` (default: the current folder)
  --db PATH|URL   what \`caplo serve --db PATH\` keeps: CAPLO_INVOCATION_LOG if set, else invocations.jsonl
                  beside the SQLite file; with a postgres:// URL, .caplo/invocations.jsonl of this node
  --file FILE     that invocation log file
Filters for the list:
  --conversation ID     only calls made in this conversation
  --key KEY             only calls and status checks of the write with this idempotency key

Exit status: 0 shown, 1 no such invocation, 2 bad usage.`;

const VALUED = ["--dir", "--db", "--file", "--limit", "--conversation", "--key"];

function summary(record: InvocationRecord): string {
  const state = record.outcome ?? (record.isError ? "error" : "ok");
  const where = record.conversationId ? `  conversation ${record.conversationId}` : "";
  return `${record.at}  ${record.invocationId}  ${record.tool ? `${record.tool} ` : ""}(${record.kind}) ${state} ${record.durationMs} ms  ${record.logs.length} log line${record.logs.length === 1 ? "" : "s"}${where}`;
}

function usage(code: string, message: string): number {
  console.error(`${code}: ${message}`);
  console.error(help);
  return 2;
}

export async function run(args: string[]): Promise<number> {
  const values = new Map<string, string>();
  const positional: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg.startsWith("--")) {
      const [name, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
      if (!VALUED.includes(name!)) return usage("option_unknown", `unknown option ${arg}`);
      const value = inline ?? args[++index];
      if (value === undefined || value === "") return usage("option_value_missing", `${name} needs a value`);
      values.set(name!, value);
    } else positional.push(arg);
  }
  if (positional.length > 1) return usage("usage_invalid", `one invocation id at most, got ${positional.length}`);
  const sources = ["--dir", "--db", "--file"].filter((name) => values.has(name));
  if (sources.length > 1) return usage("usage_invalid", `${sources.join(" and ")} name different logs: give one`);
  const limitText = values.get("--limit") ?? "20";
  const limit = Number(limitText);
  if (!/^[0-9]+$/.test(limitText) || limit < 1 || limit > 100_000) return usage("limit_invalid", "--limit is a whole number from 1 to 100000");

  let file: string;
  if (values.has("--db")) {
    const settings = invocationLogSettings(values.get("--db")!, process.env);
    if (!settings.ok) return usage(settings.error.code, settings.error.message);
    file = resolve(settings.file);
  } else if (values.has("--file")) file = resolve(values.get("--file")!);
  else file = join(resolve(values.get("--dir") ?? "."), ".caplo", "invocations.jsonl");
  // --dir is a package's folder: its log is read only while it is the package's own file, not a link out.
  const store = new JsonlLogStore(file, values.has("--dir") || !(values.has("--db") || values.has("--file")) ? { root: resolve(values.get("--dir") ?? ".") } : {});
  const outside = store.outsideRoot();
  if (outside) {
    console.error(`${outside.code}: ${outside.message}`);
    return 2;
  }

  const id = positional[0];
  if (id) {
    const records = store.read(id);
    if (records.length === 0) {
      const why = existsSync(file) || existsSync(store.previousFile) ? "(older records are rotated away as the file reaches its limit)" : "(the file does not exist: nothing was recorded there)";
      console.error(`invocation_not_found: no invocation ${id} in ${file} ${why}`);
      return 1;
    }
    for (const record of records) {
      console.log(summary(record));
      console.log(`  package ${record.packageVersionId}`);
      if (record.turnId) console.log(`  turn ${record.turnId}`);
      if (record.idempotencyKey) console.log(`  idempotency key ${record.idempotencyKey}`);
      // A line's message and data are the package's words: control characters are shown as \u escapes, so a
      // package cannot recolour, rewrite or clear the operator's terminal, nor forge a line with a newline.
      for (const line of record.logs) console.log(terminalText(`  ${line.at} ${line.level.padEnd(5)} ${line.message}${line.data !== undefined ? ` ${JSON.stringify(line.data)}` : ""}`));
    }
    return 0;
  }
  const conversation = values.get("--conversation");
  const key = values.get("--key");
  const records = store.read().filter((record) => (!conversation || record.conversationId === conversation) && (!key || record.idempotencyKey === key));
  if (records.length === 0) {
    const filtered = conversation || key ? " matching the filters" : "";
    console.log(`No invocations${filtered} in ${file} yet${values.has("--db") ? "" : ": run `caplo tool test` first"}.`);
    return 0;
  }
  for (const record of records.slice(-limit)) console.log(summary(record));
  return 0;
}
