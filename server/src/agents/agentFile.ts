// Reads agent.yaml into a checked AgentConfig, or every problem in it as `{ code, path, message, line }`:
// YAML syntax errors, schema errors (shared/src/agent.ts) and the checks that need Node (an ES256 key
// that node:crypto cannot load). Never throws for bad input.
import { readFile } from "node:fs/promises";
import { LineCounter, isNode, parseDocument, type Document } from "yaml";
import { parseAgentConfig, type AgentConfig, type AgentIssue } from "@caplo/shared";
import { loadPublicKeys } from "../identity/keys.ts";

/** A valid file also says where things are, so later problems (publishing) can name their line. */
export type AgentFileResult = { ok: true; agent: AgentConfig; lineOf: (path: string) => number | undefined } | { ok: false; issues: AgentIssue[] };

/** Largest agent.yaml read: instructions may be 32,000 characters; anything far past that is a mistake. */
export const AGENT_FILE_MAX_BYTES = 256 * 1024;

/** Parse agent.yaml text. */
export function parseAgentYaml(text: string): AgentFileResult {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((error) => {
        const at = error.linePos?.[0] ?? lines.linePos(error.pos[0]);
        const detail = error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
        return {
          code: "yaml_invalid",
          path: "",
          message: `YAML syntax error${at ? ` at line ${at.line}, column ${at.col}` : ""}: ${detail}`,
          ...(at && { line: at.line }),
        };
      }),
    };
  }
  const value: unknown = doc.toJS({ maxAliasCount: 100 });
  if (value === null || value === undefined) {
    return { ok: false, issues: [{ code: "agent_empty", path: "", message: "agent.yaml is empty: it needs apiVersion, kind, name, instructions and channels" }] };
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, issues: [{ code: "type_invalid", path: "", message: "agent.yaml must be a mapping of fields, not a list or a single value" }] };
  }
  const parsed = parseAgentConfig(value, (path) => lineOf(doc, lines, path));
  if (!parsed.ok) return parsed;
  const lineOfPath = (path: string) => lineOf(doc, lines, splitPath(path));
  const issues = checkAgent(parsed.agent).map((issue) => {
    const line = lineOfPath(issue.path);
    return line === undefined ? issue : { ...issue, line };
  });
  return issues.length > 0 ? { ok: false, issues } : { ok: true, agent: parsed.agent, lineOf: lineOfPath };
}

/** Read and parse an agent.yaml file. */
export async function loadAgentFile(file: string): Promise<AgentFileResult> {
  let text: string;
  try {
    const bytes = await readFile(file);
    if (bytes.length > AGENT_FILE_MAX_BYTES) {
      return { ok: false, issues: [{ code: "agent_file_too_large", path: "", message: `${file} is over ${AGENT_FILE_MAX_BYTES} bytes` }] };
    }
    text = bytes.toString("utf8");
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    return { ok: false, issues: [{ code: "agent_file_unreadable", path: "", message: `cannot read ${file}: ${reason}` }] };
  }
  return parseAgentYaml(text);
}

/** Checks beyond the schema: the ES256 public key or JWKS must load as a P-256 key. */
export function checkAgent(agent: AgentConfig): AgentIssue[] {
  if (agent.identity?.algorithm !== "ES256") return [];
  const keys = loadPublicKeys(agent.identity);
  return keys.ok ? [] : [{ code: keys.error.code, path: keys.error.path, message: keys.error.message }];
}

/** `tools[1].name` → ["tools", 1, "name"]; the root "" → []. */
function splitPath(path: string): (string | number)[] {
  if (path === "") return [];
  return path
    .replace(/\[(\d+)\]/g, ".$1")
    .split(".")
    .filter((part) => part !== "")
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
}

function lineOf(doc: Document, lines: LineCounter, path: readonly PropertyKey[]): number | undefined {
  // The deepest node that exists on the path: a missing field is reported at its parent mapping.
  for (let depth = path.length; depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth) as (string | number)[], true);
    if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
  }
  return undefined;
}
