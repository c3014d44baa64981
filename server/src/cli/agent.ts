// `caplo agent validate|publish|schema`: check an agent.yaml, publish it as an immutable release pinned
// to built package versions, and print the JSON Schema of agent.yaml.
import { buildSettings } from "../app/runnerSettings.ts";
import { readConfig } from "../config/index.ts";
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { AGENT_NAME_PATTERN, DEFAULT_WORKSPACE, TOOL_REF_PATTERN, WORKSPACE_ID_PATTERN, type AgentIssue, type Release } from "@caplo/shared";
import { agentJsonSchemaText, createRelease, FileReleaseStore, loadAgentFile, parseAgentYaml } from "../agents/index.ts";
import { loadVersion } from "../agents/versionSource.ts";
import { workspaceReleasesDir } from "../agents/releaseStore.ts";
import { auditPublish } from "../agents/releaseAudit.ts";
import { openStore, type Store } from "../store/index.ts";
import { ACTOR_PATTERN, operatorActor, storeLocation } from "./operator.ts";

/** Where releases are kept unless --store or CAPLO_RELEASES_DIR says otherwise. */
export const DEFAULT_RELEASES_DIR = ".caplo/releases";

type Io = { out: (line: string) => void; err: (line: string) => void };
const consoleIo: Io = { out: (line) => console.log(line), err: (line) => console.error(line) };

export const validate = {
  help: `caplo agent validate FILE

Checks an agent.yaml: YAML syntax, every field (other fields are refused), tool references,
origins, channels and identity settings (an ES256 key must load as P-256).
Prints each problem as FILE:LINE: PATH: MESSAGE [CODE]. Exit code 0 when valid, 1 when not, 2 on usage errors.`,
  run: (args: string[]) => runValidate(args, consoleIo),
};

export const publish = {
  help: `caplo agent publish FILE --packages DIR... [--store DIR] [--workspace ID] [--db PATH|URL] [--by WHO] [--json]

Publishes an agent as an immutable release. Each --packages DIR is a tool package folder, built now
(the same build as caplo tool build), a built version's JSON file, or a remote MCP server version file
(caplo remote publish; the release pins its id, and serving reads it from that file). Every package/tool the agent
lists must resolve to exactly one of them. The release pins those exact package version ids and is
content-hashed: publishing the same agent with the same package versions again changes nothing.
Each pinned version's frozen copy (exactly the files the package ships) is kept in DIR/versions/ of the
store; caplo serve runs those copies, checked against their hashes, never the package folders.
A new package version reaches customers only through a new release.

  --store DIR  where releases are kept (default $CAPLO_RELEASES_DIR or ${DEFAULT_RELEASES_DIR})
  --workspace ID  publish in this workspace (default: default): kept in DIR/@ID/ with its own versions/,
               served as caplo serve --agent ID/NAME (docs/operators/workspaces.md)
  --db PATH|URL   the store caplo serve uses (default $CAPLO_DATABASE_URL, else $CAPLO_DB, else .caplo/caplo.db):
               the publish is recorded there, in the workspace's audit, as release.published with who and when
               (once per change of the latest release); nothing is published when it cannot be reached
  --by WHO     who publishes, for the audit (default: cli:<user>@<host> of the operating system)
  --json       print the whole release as JSON instead of a summary`,
  run: (args: string[]) => runPublish(args, consoleIo),
};

export const init = {
  help: `caplo agent init NAME [--tools PACKAGE/TOOL,...] [--origin ORIGIN]... [--file FILE] [--force]

Writes a starter agent.yaml (or FILE) for the agent NAME: instructions to edit, the tools given,
the web channel on the given origins (default http://localhost:5173), and the schema line that gives
editors completion. It never overwrites a file unless --force is given.`,
  run: (args: string[]) => runInit(args, consoleIo),
};

export const schema = {
  help: `caplo agent schema

Prints the JSON Schema (draft 2020-12) of agent.yaml, generated from the zod schema in @caplo/shared.
schemas/agent.schema.json is this output; regenerate it with:
  node bin/caplo.mjs agent schema > schemas/agent.schema.json`,
  run: async (_args: string[]) => {
    process.stdout.write(agentJsonSchemaText());
    return 0;
  },
};

export async function runInit(args: string[], io: Io): Promise<number> {
  const names: string[] = [];
  const tools: string[] = [];
  const origins: string[] = [];
  let file = "agent.yaml";
  let force = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    const value = () => {
      const next = args[++index];
      return next === undefined || next.startsWith("--") ? undefined : next;
    };
    if (arg === "--tools") tools.push(...(value() ?? "").split(",").filter(Boolean));
    else if (arg === "--origin") origins.push(value() ?? "");
    else if (arg === "--file") file = value() ?? "";
    else if (arg === "--force") force = true;
    else if (arg.startsWith("-")) return usageError(io, `unknown option ${arg}`);
    else names.push(arg);
  }
  const name = names[0];
  if (names.length !== 1 || name === undefined) return usageError(io, "give the agent's name, for example caplo agent init shop-assistant");
  if (!AGENT_NAME_PATTERN.test(name)) return usageError(io, `${name} is not an agent name: lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters`);
  const badTool = tools.find((tool) => !TOOL_REF_PATTERN.test(tool));
  if (badTool !== undefined) return usageError(io, `${badTool} is not package/tool`);
  if (file === "") return usageError(io, "--file needs a path");
  const text = starterAgent(name, tools, origins.length > 0 ? origins : ["http://localhost:5173"]);
  // Checked as validate checks it before anything is written, so a bad --origin leaves no file behind.
  const checked = parseAgentYaml(text);
  if (!checked.ok) {
    printIssues(io, file, checked.issues);
    return 1;
  }
  try {
    await writeFile(file, text, { flag: force ? "w" : "wx" });
  } catch (error) {
    const exists = (error as NodeJS.ErrnoException).code === "EEXIST";
    io.err(exists ? `${file} already exists: use --force to overwrite it` : `cannot write ${file}: ${(error as Error).message}`);
    return 1;
  }
  io.out(`wrote ${file} for agent ${name}: edit its instructions, then run caplo agent validate ${file}`);
  return 0;
}

function usageError(io: Io, message: string): number {
  io.err(`caplo agent init: ${message}`);
  return 2;
}

/** A starter agent.yaml: valid as written once its origins are right. */
export function starterAgent(name: string, tools: string[], origins: string[]): string {
  const list = (items: string[]) => (items.length === 0 ? " []\n" : `\n${items.map((item) => `  - ${item}\n`).join("")}`);
  return `# yaml-language-server: $schema=https://docs.caplo.si/schemas/agent.schema.json
apiVersion: v1
kind: Agent
name: ${name}
instructions: |
  You are the assistant of our shop. Answer briefly and politely. Use the tools to look things up;
  never guess an order's status. Ask for the order number when you need one.
# package/tool references; the model sees each as <package>__<tool>.
tools:${list(tools)}# Websites the widget may be embedded on: https, or http only for localhost.
origins:${list(origins)}channels:
  web: {}
greeting: Hi! How can I help you today?
locale: en
`;
}

export async function runValidate(args: string[], io: Io): Promise<number> {
  const files = args.filter((arg) => !arg.startsWith("-"));
  const unknown = args.filter((arg) => arg.startsWith("-"));
  if (files.length !== 1 || unknown.length > 0) {
    io.err(`usage: caplo agent validate FILE${unknown.length > 0 ? ` (unknown option ${unknown[0]})` : ""}`);
    return 2;
  }
  const file = files[0]!;
  const loaded = await loadAgentFile(file);
  if (!loaded.ok) {
    printIssues(io, file, loaded.issues);
    return 1;
  }
  const { agent } = loaded;
  const channels = Object.keys(agent.channels).join(", ");
  io.out(`${file}: valid agent ${agent.name}: ${agent.tools.length} tool${agent.tools.length === 1 ? "" : "s"}, channels ${channels}${agent.identity ? `, identity ${agent.identity.algorithm}` : ""}`);
  return 0;
}

type PublishArgs = { file: string; packages: string[]; store: string; workspace: string; db: string; by: string; json: boolean };

export function parsePublishArgs(args: string[], env: Record<string, string | undefined>): PublishArgs | string {
  const files: string[] = [];
  const packages: string[] = [];
  let store = env.CAPLO_RELEASES_DIR || DEFAULT_RELEASES_DIR;
  let workspace = DEFAULT_WORKSPACE;
  let json = false;
  let db: string | undefined;
  let by: string | undefined;
  let mode: "file" | "packages" = "file";
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === "--packages") mode = "packages";
    else if (arg.startsWith("--packages=")) packages.push(arg.slice("--packages=".length));
    else if (arg === "--store") {
      const value = args[++index];
      if (value === undefined || value.startsWith("-")) return "--store needs a folder";
      store = value;
    } else if (arg.startsWith("--store=")) store = arg.slice("--store=".length);
    else if (arg === "--workspace" || arg.startsWith("--workspace=")) {
      const value = arg.includes("=") ? arg.slice("--workspace=".length) : args[++index];
      if (value === undefined || !WORKSPACE_ID_PATTERN.test(value)) return "--workspace needs a workspace id (lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters)";
      workspace = value;
    }
    else if (arg === "--db" || arg.startsWith("--db=")) {
      const value = arg.includes("=") ? arg.slice("--db=".length) : args[++index];
      if (!value || value.startsWith("-")) return "--db needs the store: a SQLite file's path or a postgres:// URL (where caplo serve reads the audit)";
      db = value;
    } else if (arg === "--by" || arg.startsWith("--by=")) {
      const value = arg.includes("=") ? arg.slice("--by=".length) : args[++index];
      if (value === undefined || !ACTOR_PATTERN.test(value)) return "--by names who publishes, for the workspace's audit: 1 to 200 printable characters";
      by = value;
    }
    else if (arg === "--json") json = true;
    else if (arg.startsWith("-")) return `unknown option ${arg}`;
    else if (mode === "packages") packages.push(arg);
    else files.push(arg);
  }
  if (files.length !== 1) return "give exactly one agent file";
  if (packages.length === 0 && args.includes("--packages")) return "--packages needs at least one folder";
  return { file: files[0]!, packages, store: workspaceReleasesDir(store, workspace), workspace, db: storeLocation(db, env), by: operatorActor(by), json };
}

export async function runPublish(args: string[], io: Io, env: Record<string, string | undefined> = process.env, now = new Date()): Promise<number> {
  const parsed = parsePublishArgs(args, env);
  if (typeof parsed === "string") {
    io.err(`caplo agent publish: ${parsed}\nusage: caplo agent publish FILE --packages DIR... [--store DIR] [--workspace ID] [--db PATH|URL] [--by WHO] [--json]`);
    return 2;
  }
  const loaded = await loadAgentFile(parsed.file);
  if (!loaded.ok) {
    printIssues(io, parsed.file, loaded.issues);
    return 1;
  }

  // A package folder is built here: with the runner's settings (CAPLO_NODE24, CAPLO_CGROUPS), read once.
  const read = readConfig(env);
  if (!read.ok) {
    for (const error of read.errors) io.err(`caplo agent publish: ${error.path}: ${error.message} [${error.code}]`);
    return 2;
  }
  const versions: unknown[] = [];
  let failed = false;
  for (const source of parsed.packages) {
    const version = await loadVersion(source, buildSettings(read.config));
    if (version.ok) versions.push(version.version);
    else {
      failed = true;
      for (const issue of version.issues) io.err(`${source}: ${issue.path ? `${issue.path}: ` : ""}${issue.message} [${issue.code}]`);
    }
  }
  if (failed) return 1;

  const result = createRelease(loaded.agent, versions, now);
  if (!result.ok) {
    const located = result.issues.map((issue) => {
      const line = issue.path.startsWith("packages") ? undefined : loaded.lineOf(issue.path);
      return line === undefined ? issue : { ...issue, line };
    });
    printIssues(io, parsed.file, located);
    return 1;
  }
  // The workspace's audit records who published, in the store caplo serve uses: reached before anything is
  // written, so a publish that cannot be recorded changes nothing.
  let audit: Store;
  try {
    audit = await openStore(parsed.db, { synchronous: read.config.CAPLO_SQLITE_SYNCHRONOUS });
  } catch (error) {
    io.err(`caplo agent publish: store_unavailable at --db: the store ${redactUrl(parsed.db)} cannot be opened (${(error as Error).message}); nothing was published`);
    return 1;
  }
  try {
    const store = new FileReleaseStore(resolve(parsed.store));
    // The pinned versions' frozen copies go with the release: serving runs exactly those files.
    const kept = store.keepVersions(result.release);
    if (kept) {
      io.err(`${parsed.file}: ${kept.message} [${kept.code}]`);
      return 1;
    }
    const { created } = await store.put(result.release);
    // Unchanged content keeps the release as first published (its publishedAt included).
    const release = created ? result.release : ((await store.get(result.release.id)) ?? result.release);
    let audited: Awaited<ReturnType<typeof auditPublish>>;
    try {
      audited = await auditPublish(audit, { workspaceId: parsed.workspace, agent: release.agent, releaseId: release.id, actor: parsed.by, at: now.getTime() });
    } catch (error) {
      io.err(`caplo agent publish: audit_not_recorded: ${release.id} is published but its audit entry could not be stored (${(error as Error).message}); run the same publish again to record it`);
      return 1;
    }
    if (parsed.json) io.out(JSON.stringify(release, null, 2));
    else io.out(`${describeRelease(release, created)}\n  audit     ${audited ? `${audited.action} by ${audited.actor} in workspace ${parsed.workspace}` : "already recorded (the latest published)"}`);
    return 0;
  } finally {
    await audit.close();
  }
}

/** A store location for a message: a postgres:// URL without its password. */
function redactUrl(location: string): string {
  try {
    const url = new URL(location);
    if (url.password) url.password = "***";
    return url.protocol.startsWith("postgres") ? url.toString() : location;
  } catch {
    return location;
  }
}

export function describeRelease(release: Release, created: boolean): string {
  const lines = [
    `${created ? "Published" : "Unchanged (already published; now the latest)"} ${release.id}`,
    `  agent     ${release.agent}`,
    `  packages  ${release.packages.length === 0 ? "none" : ""}`,
    ...release.packages.map((version) => `    ${version.id}`),
    `  tools     ${release.tools.length === 0 ? "none" : ""}`,
    ...release.tools.map((tool) => {
      const policy = tool.policy;
      const effect = policy.effect === "write" ? `write, confirmation ${policy.confirmation}` : "read";
      return `    ${tool.modelName.padEnd(40)} ${effect}, ${policy.timeoutSeconds}s${policy.subject ? ", verified customer" : ""}`;
    }),
  ];
  return lines.map((line) => line.trimEnd()).join("\n");
}

function printIssues(io: Io, file: string, issues: AgentIssue[]): void {
  for (const issue of issues) {
    io.err(`${file}${issue.line !== undefined ? `:${issue.line}` : ""}: ${issue.path ? `${issue.path}: ` : ""}${issue.message} [${issue.code}]`);
  }
}
