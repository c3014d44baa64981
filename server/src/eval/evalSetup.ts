// What an evaluation runs against, each way it can be named: a published release (NAME@sha256:…, or NAME
// for its latest) from a release store, or an agent file with its packages (built now, or built versions'
// JSON, as `caplo agent publish` takes them) made into a release in memory and never stored. The model is
// the configured one: OpenAI-compatible from the environment, else the scripted model with a rules file
// (`caplo serve --script` format) or the offline demo's rules. Every failure is a coded error value.
import { readFile } from "node:fs/promises";
import { parseEvalCases, type EvalCases, type EvalCasesError, type PackageVersion, type Release } from "@caplo/shared";
import { createRelease, FileReleaseStore, loadAgentFile } from "../agents/index.ts";
import type { AgentRelease } from "../engine/release.ts";
import { modelFromEnv } from "../model/config.ts";
import type { Model } from "../model/model.ts";
import { ScriptedModel } from "../model/scripted.ts";
import { secretValues } from "../runner/fixtures.ts";

export type EvalError = { code: string; path: string; message: string; line?: number; column?: number };
type Result<T> = { ok: true; value: T } | { ok: false; errors: EvalError[] };
const fail = (code: string, path: string, message: string): { ok: false; errors: EvalError[] } => ({ ok: false, errors: [{ code, path, message }] });

/** Read and parse a cases file. */
export async function loadEvalCases(file: string): Promise<Result<EvalCases>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    return fail("eval_cases_unreadable", file, `cannot read the cases file: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`);
  }
  const parsed = parseEvalCases(text);
  return parsed.ok ? { ok: true, value: parsed.cases } : { ok: false, errors: parsed.errors as EvalCasesError[] };
}

export type ReleaseSourceSpec = { release: string; releasesDir: string } | { agentFile: string; packages: string[] };

/** The release to evaluate. */
export async function resolveEvalRelease(spec: ReleaseSourceSpec, now = new Date()): Promise<Result<AgentRelease>> {
  if ("release" in spec) {
    const store = new FileReleaseStore(spec.releasesDir);
    let release: Release | undefined;
    try {
      release = spec.release.includes("@") ? await store.get(spec.release) : await store.latest(spec.release);
    } catch (error) {
      return fail((error as { code?: string }).code ?? "release_unreadable", spec.release, (error as Error).message);
    }
    if (!release) return fail("release_not_found", "--release", `no release ${spec.release} in ${spec.releasesDir} (caplo agent publish prints release ids)`);
    return { ok: true, value: release };
  }
  const agent = await loadAgentFile(spec.agentFile);
  if (!agent.ok) return { ok: false, errors: agent.issues.map((issue) => ({ code: issue.code, path: issue.path, message: issue.message, ...(issue.line !== undefined && { line: issue.line }) })) };
  const { loadVersion } = await import("../agents/versionSource.ts");
  const versions: unknown[] = [];
  const errors: EvalError[] = [];
  for (const source of spec.packages) {
    const loaded = await loadVersion(source);
    if (loaded.ok) versions.push(loaded.version);
    else errors.push(...loaded.issues.map((issue) => ({ code: issue.code, path: `${source}${issue.path ? ` ${issue.path}` : ""}`, message: issue.message })));
  }
  if (errors.length > 0) return { ok: false, errors };
  const created = createRelease(agent.agent, versions, now);
  if (!created.ok) return { ok: false, errors: created.issues.map((issue) => ({ code: issue.code, path: issue.path, message: issue.message })) };
  return { ok: true, value: created.release };
}

/** A cases file naming another agent than the release's is refused before anything runs. */
export function checkCasesAgainst(cases: EvalCases, release: AgentRelease): EvalError[] {
  return cases.agent !== undefined && cases.agent !== release.agent
    ? [{ code: "eval_agent_mismatch", path: "agent", message: `the cases are for agent ${cases.agent}, the release is of ${release.agent}` }]
    : [];
}

/**
 * The model: the agent's `model:` or the environment's OpenAI-compatible one, else the scripted model with
 * `script` (a rules file, or "demo" for the offline demo's rules).
 */
export async function evalModel(release: AgentRelease, env: Record<string, string | undefined>, script?: string): Promise<Result<Model>> {
  let configured: Model | undefined;
  try {
    configured = modelFromEnv(env, release.config.model);
  } catch (error) {
    const typed = error as { code?: string; path?: string; message?: string };
    return fail(typed.code ?? "model_config_invalid", typed.path ?? "", typed.message ?? String(error));
  }
  if (configured) return { ok: true, value: configured };
  if (script === "demo") {
    const { createDemoModel } = await import("../demo/demoScript.ts");
    return { ok: true, value: createDemoModel() };
  }
  if (script === undefined) return { ok: true, value: new ScriptedModel([], { id: "no-rules" }) };
  const { loadScript } = await import("../model/scriptFile.ts");
  const loaded = await loadScript(script);
  if (!loaded.ok) return { ok: false, errors: [loaded.error] };
  return { ok: true, value: new ScriptedModel(loaded.rules, { id: "eval" }) };
}

/**
 * Secret values for live reads, as `caplo tool test` finds them: the environment variable of each name the
 * package declares, then `secretsFile` (dotenv lines). A release runs a frozen copy of each package, which
 * holds no local secrets file.
 */
export function testSecrets(versions: readonly PackageVersion[], env: NodeJS.ProcessEnv, secretsFile?: string): (packageVersionId: string) => Record<string, string> {
  const byVersion = new Map<string, Record<string, string>>();
  for (const version of versions) byVersion.set(version.id, secretValues(version.manifest.secrets ?? [], env, secretsFile).values);
  return (packageVersionId) => byVersion.get(packageVersionId) ?? {};
}
