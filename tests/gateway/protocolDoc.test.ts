// docs/widget-protocol.md cannot drift from what the gateway does: every client and server frame and
// customer event of the shared schemas has its section listing exactly its fields, every error and close
// code of shared/src/widgetCodes.ts has its row (and no other code does), every code the engine and the
// identity check answer a widget's frame with is listed, and the limits table shows the gateway's defaults.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { ACTION_ERROR_CODES, clientFrameSchema, CLOSE_CODES, FRAME_REF_MAX, GATEWAY_ERROR_CODES, inboundSchema, serverFrameSchema } from "@caplo/shared";
import { DEFAULT_ADDRESS_LIMITS } from "../../server/src/gateway/addressLimits.ts";
import { DEFAULT_LIMITS } from "../../server/src/gateway/connectionDeps.ts";
import { DEFAULT_HELLO_TIMEOUT_MS } from "../../server/src/gateway/settings.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const DOC = readFileSync(join(ROOT, "docs", "widget-protocol.md"), "utf8");

/** The `## title` part of the page, split into its `### \`name\`` sections with their table's first cells. */
function sections(title: string): Map<string, string[]> {
  const part = DOC.split(/^## /m).find((chunk) => chunk.startsWith(`${title}\n`));
  if (!part) throw new Error(`docs/widget-protocol.md has no "## ${title}"`);
  const found = new Map<string, string[]>();
  for (const chunk of part.split(/^### /m).slice(1)) {
    const name = /^`([a-z_]+)`/.exec(chunk)?.[1];
    if (!name) throw new Error(`a section of "## ${title}" is not named \`like_this\`: ${chunk.slice(0, 40)}`);
    found.set(name, [...chunk.matchAll(/^\| `([A-Za-z_]+)` \|/gm)].map((match) => match[1]!));
  }
  return found;
}

/** The rows of the `## title` table: first cell (without backticks) → the other cells. */
function table(title: string): Map<string, string[]> {
  const part = DOC.split(/^## /m).find((chunk) => chunk.startsWith(`${title}\n`)) ?? "";
  const rows = new Map<string, string[]>();
  for (const line of part.split("\n")) {
    const cells = /^\|(.*)\|$/.exec(line)?.[1]?.split(" | ").map((cell) => cell.trim());
    if (!cells || /^-+$/.test(cells[0]!.replace(/\|/g, "")) || cells[0]!.startsWith("---")) continue;
    rows.set(cells[0]!.replace(/`/g, ""), cells.slice(1));
  }
  rows.delete("code");
  rows.delete("limit");
  return rows;
}

type Union = { options: readonly z.ZodObject[] };
const frames = (schema: Union, key: string) => new Map(schema.options.map((option) => [String((option.shape[key] as unknown as { value: unknown }).value), Object.keys(option.shape)]));

describe("docs/widget-protocol.md", () => {
  it("lists every frame and customer event of the shared schemas, each with exactly its fields", () => {
    for (const [title, schema, key] of [
      ["Client frames", clientFrameSchema, "t"],
      ["Server frames", serverFrameSchema, "t"],
      ["Customer events", inboundSchema, "type"],
    ] as const) {
      const documented = sections(title);
      const defined = frames(schema as unknown as Union, key);
      expect([...documented.keys()].sort(), `the ${title} sections`).toEqual([...defined.keys()].sort());
      for (const [name, fields] of defined) expect(documented.get(name)?.sort(), `the fields of ${name} under ${title}`).toEqual([...fields].sort());
    }
  });

  it("lists every error code with its advice, and no code the gateway does not have", () => {
    const codes: Record<string, { advice: string }> = { ...GATEWAY_ERROR_CODES, ...ACTION_ERROR_CODES };
    const rows = table("Error codes");
    expect([...rows.keys()].sort()).toEqual(Object.keys(codes).sort());
    for (const [code, { advice }] of Object.entries(codes)) expect(rows.get(code)?.[1], code).toBe(advice);
  });

  it("lists every close code", () => {
    expect([...table("Close codes").keys()].sort()).toEqual(Object.keys(CLOSE_CODES).sort());
  });

  it("every code the engine or the identity check returns for a widget's action is a listed code", () => {
    const listed = new Set(Object.keys({ ...GATEWAY_ERROR_CODES, ...ACTION_ERROR_CODES }));
    // Codes of the team API, settings and background work: they never answer a widget's frame.
    const notForWidgets = new Set(["conversation_held", "conversation_not_held", "not_checkable", "not_running", "channel_identity_invalid", "file_retention_invalid", "handoff_secret_invalid", "handoff_webhook_invalid", "handoff_webhook_missing", "proposal_ttl_invalid", "transcript_budget_invalid", "identity_key_invalid", "identity_secret_missing", "identity_secret_weak", "write_blocked", "write_not_found", "write_not_follow_up", "write_changed"]);
    const files = (dir: string): string[] => readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : name.endsWith(".ts") && !name.endsWith(".test.ts") ? [join(dir, name)] : []));
    const returned = new Set<string>();
    for (const file of [...files(join(ROOT, "server", "src", "engine")), ...files(join(ROOT, "server", "src", "identity"))]) {
      const text = readFileSync(file, "utf8");
      for (const match of text.matchAll(/fail\("([a-z_]+)"|code: "([a-z_]+)"/g)) returned.add((match[1] ?? match[2])!);
    }
    expect(returned.size).toBeGreaterThan(20);
    expect([...returned].filter((code) => !listed.has(code) && !notForWidgets.has(code))).toEqual([]);
  });

  it("the limits table shows the gateway's defaults", () => {
    const rows = [...table("Limits").entries()];
    const row = (start: string) => rows.find(([label]) => label.startsWith(start))?.[1];
    expect(row("frame size")?.[0]).toBe(`${DEFAULT_LIMITS.maxFrameBytes} bytes`);
    expect(row("hard payload")?.[0]).toBe(`${Math.max(1024 * 1024, DEFAULT_LIMITS.maxFrameBytes * 4)} bytes`);
    expect(row("frames per second")?.[0]).toBe(`${DEFAULT_LIMITS.framesPerSecond}, burst ${DEFAULT_LIMITS.burst}`);
    expect(row("ref")?.[0]).toBe(`${FRAME_REF_MAX} characters`);
    expect(row("hello timeout")).toEqual([`${DEFAULT_HELLO_TIMEOUT_MS / 1000} s`, "`CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS`"]);
    expect(row("open sockets per client address")).toEqual([`${DEFAULT_ADDRESS_LIMITS.socketsPerAddress}`, "`CAPLO_WIDGET_SOCKETS_PER_ADDRESS`"]);
    expect(row("new conversations per client address")).toEqual([`${DEFAULT_ADDRESS_LIMITS.conversationsPerMinute}`, "`CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE`"]);
    expect(row("bytes waiting")?.[0]).toBe(`${DEFAULT_LIMITS.maxBufferedBytes} bytes`);
    expect(row("a full send buffer")?.[0]).toBe(`${DEFAULT_LIMITS.stallTimeoutMs / 1000} s`);
  });

  it("is linked from docs/README.md", () => {
    expect(readFileSync(join(ROOT, "docs", "README.md"), "utf8")).toContain("(widget-protocol.md)");
  });
});
