// Reads answered from a package's own fixtures (a case with `reads: fixtures`): a read call whose arguments
// equal a call fixture's `input` gets that fixture's expected result (or its error text) without running
// anything. Fixtures of write tools and status fixtures are never used; a fixture whose expected result holds
// a matcher ($match, $any) is not a concrete answer and is skipped. The files are the runner's fixture format
// (server/src/runner/fixtures.ts), loaded once per package version.
import type { PackageVersion } from "@caplo/shared";
import { loadFixtures, type Fixture } from "../runner/fixtures.ts";
import type { ToolCallResult } from "../runner/api.ts";
import { canonical } from "./argsMatch.ts";

type Answer = { input: string; fixture: Fixture; label: string };

const hasMatcher = (value: unknown): boolean =>
  Array.isArray(value)
    ? value.some(hasMatcher)
    : typeof value === "object" && value !== null && ("$match" in value || "$any" in value || Object.values(value).some(hasMatcher));

export class FixtureBook {
  private readonly byVersion = new Map<string, Promise<Map<string, Answer[]>>>();

  /** The fixture answers of a version's read tools, by tool name (loaded on first use). */
  private answers(version: PackageVersion): Promise<Map<string, Answer[]>> {
    let loaded = this.byVersion.get(version.id);
    if (!loaded) {
      loaded = this.load(version);
      this.byVersion.set(version.id, loaded);
    }
    return loaded;
  }

  private async load(version: PackageVersion): Promise<Map<string, Answer[]>> {
    const byTool = new Map<string, Answer[]>();
    // A remote MCP version has no package folder of fixtures.
    if (!version.manifest.tests || version.id.startsWith("remote:")) return byTool;
    const entries = await loadFixtures(version.dir, version.manifest.tests).catch(() => []);
    for (const entry of entries) {
      const fixture = entry.fixture;
      if (!fixture || fixture.status) continue;
      const name = fixture.tool ?? (version.tools.length === 1 ? version.tools[0]!.name : undefined);
      const tool = version.tools.find((candidate) => candidate.name === name);
      if (!tool || tool.policy.effect !== "read" || hasMatcher(fixture.expect.result)) continue;
      const list = byTool.get(tool.name) ?? [];
      list.push({ input: canonical(fixture.input ?? {}), fixture, label: entry.label });
      byTool.set(tool.name, list);
    }
    return byTool;
  }

  /** The fixture's answer to this read, or why there is none. */
  async answer(version: PackageVersion, tool: string, args: unknown, invocationId: string): Promise<{ ok: true; result: ToolCallResult; label: string } | { ok: false; problem: string }> {
    const answers = (await this.answers(version)).get(tool) ?? [];
    const wanted = canonical(args ?? {});
    const found = answers.find((answer) => answer.input === wanted);
    if (!found) {
      return { ok: false, problem: `no fixture of ${version.name}/${tool} has the input ${wanted} (${answers.length} usable fixture${answers.length === 1 ? "" : "s"} of this tool): add one, or run the case with reads: live` };
    }
    const expect = found.fixture.expect;
    const isError = expect.isError ?? false;
    const structured = !isError && expect.result && typeof expect.result === "object" && !Array.isArray(expect.result) ? (expect.result as Record<string, unknown>) : undefined;
    const modelText = isError ? (expect.text ?? "The tool failed.") : structured ? JSON.stringify(structured) : (expect.text ?? "");
    return {
      ok: true,
      label: found.label,
      result: { invocationId, modelText, isError, ...(structured && { structuredContent: structured }), files: [], logs: [], durationMs: 0 },
    };
  }
}
