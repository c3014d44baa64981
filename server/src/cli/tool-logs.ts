// `caplo tool logs [INVOCATION_ID]`: shows the log lines kept with an invocation (or lists the recent
// invocations) from the local log store that `caplo tool test` writes.
import { join, resolve } from "node:path";
import { JsonlLogStore, type InvocationRecord } from "../runner/index.ts";

export const help = `Usage: caplo tool logs [INVOCATION_ID] [--dir DIR] [--limit N]

Without an id: lists the most recent invocations (default 20). With an id: prints its log lines.
Reads DIR/.caplo/invocations.jsonl (DIR defaults to the current folder), written by \`caplo tool test\`.`;

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
}

function summary(record: InvocationRecord): string {
  const state = record.outcome ?? (record.isError ? "error" : "ok");
  return `${record.at}  ${record.invocationId}  ${record.tool} (${record.kind}) ${state} ${record.durationMs} ms  ${record.logs.length} log line${record.logs.length === 1 ? "" : "s"}`;
}

export async function run(args: string[]): Promise<number> {
  const dir = resolve(option(args, "--dir") ?? ".");
  const limit = Number(option(args, "--limit") ?? 20);
  const id = args.find((arg, index) => !arg.startsWith("--") && !["--dir", "--limit"].includes(args[index - 1] ?? ""));
  const store = new JsonlLogStore(join(dir, ".caplo", "invocations.jsonl"));
  const records = store.read(id);
  if (id) {
    if (records.length === 0) {
      console.error(`invocation_not_found: no invocation ${id} in ${store.file}`);
      return 1;
    }
    for (const record of records) {
      console.log(summary(record));
      console.log(`  package ${record.packageVersionId}`);
      for (const line of record.logs) console.log(`  ${line.at} ${line.level.padEnd(5)} ${line.message}${line.data !== undefined ? ` ${JSON.stringify(line.data)}` : ""}`);
    }
    return 0;
  }
  if (records.length === 0) {
    console.log(`No invocations in ${store.file} yet: run \`caplo tool test\` first.`);
    return 0;
  }
  for (const record of records.slice(-limit)) console.log(summary(record));
  return 0;
}
