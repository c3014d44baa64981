// The call context exactly as the seeds' table gives it, as a function package's handler receives it
// through the real build, runner, prebuilt host and sandbox (packages/context): every field, secrets.get
// and has, idempotencyKey for writes only, subject only for tools that declare it, canElicit only where
// the visitor can answer, log lines kept with the invocation (a failing log call never fails the tool),
// and signal aborting the handler's fetch at timeoutSeconds.
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallSubject, PackageVersion, ToolPolicy } from "@caplo/shared";
import { buildPackage } from "../../server/src/build/index.ts";
import type { ToolCallRequest } from "../../server/src/runner/api.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { PACKAGES_DIR } from "./testPackages.ts";

const KEY = "sk_context_5e8d02";
const subject: CallSubject = { id: "cust-9", ref: "acct-9", level: "high", authTime: "2026-12-01T10:00:00.000Z" };
let http: Server;
/** Requests to /hang, in order: each settles when its connection closes (the fetch was aborted). */
const hangs = Array.from({ length: 2 }, () => {
  let closed: () => void = () => undefined;
  return { closed: new Promise<void>((resolve) => (closed = resolve)), close: () => closed() };
});
let hangCount = 0;
let runner: CaploToolRunner;
let read: PackageVersion;
const variants: Record<string, PackageVersion> = {};

/** The built version with another policy for its one tool (another id, so another warm process). */
function variant(base: PackageVersion, name: string, policy: Partial<ToolPolicy>): PackageVersion {
  const tool = base.tools[0]!;
  return { ...base, id: `${base.id}-${name}`, tools: [{ ...tool, policy: { ...tool.policy, ...policy } as ToolPolicy }] };
}

beforeAll(async () => {
  http = createServer((request) => {
    if (request.url !== "/hang") return;
    const hang = hangs[hangCount++];
    request.socket.once("close", () => hang?.close());
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const built = await buildPackage(join(PACKAGES_DIR, "context"));
  if (!built.ok) throw new Error(JSON.stringify(built.errors));
  read = built.version;
  variants.write = variant(read, "write", { effect: "write", confirmation: "required" });
  variants.subject = variant(read, "subject", { subject: { policy: "verified_required" } });
  // 2 s: long enough for the handler to reach its fetch on a loaded machine before the deadline.
  variants.short = variant(read, "short", { timeoutSeconds: 2 });
  variants.asking = variant(read, "asking", { elicitation: { style: "form", fields: [{ name: "size" }] } });
  variants.shortWrite = variant(read, "short-write", { effect: "write", confirmation: "required", timeoutSeconds: 2 });
  runner = new CaploToolRunner({ egressResolve: `allowed.test=127.0.0.1:${(http.address() as { port: number }).port}` });
  for (const version of [read, ...Object.values(variants)]) await runner.load(version);
}, 120_000);

afterAll(async () => {
  await runner?.close();
  http?.closeAllConnections();
  await new Promise((resolve) => http?.close(resolve));
});

let counter = 0;
async function probe(version: PackageVersion, context: Partial<ToolCallRequest["context"]> = {}, more: Partial<ToolCallRequest> = {}) {
  const result = await runner.call({
    packageVersionId: version.id,
    tool: "probe",
    args: {},
    context: { invocationId: `ctx-${++counter}`, secrets: { API_KEY: KEY, OTHER: "undeclared-value" }, ...context },
    ...more,
  });
  return { result, seen: result.structuredContent as Record<string, unknown> };
}

describe("a function package's call context through the runner", () => {
  it("has exactly the seeds' fields, with the ids, deadline and version of this call", async () => {
    const before = Date.now();
    const { result, seen } = await probe(read, { conversationId: "conv-1", turnId: "turn-1", workspaceId: "ws-1" });
    expect(result.isError, result.modelText).toBe(false);
    expect(seen.keys).toEqual(
      ["canElicit", "conversationId", "deadline", "elicit", "idempotencyKey", "invocationId", "log", "packageVersionId", "requireSubject", "secrets", "signal", "subject", "turnId", "workspaceId"],
    );
    expect(seen).toMatchObject({ invocationId: result.invocationId, conversationId: "conv-1", turnId: "turn-1", workspaceId: "ws-1", packageVersionId: read.id, signalAborted: false });
    const deadline = Date.parse(String(seen.deadline));
    expect(deadline).toBeGreaterThanOrEqual(before + 5000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 5000);
    // The sandbox's environment holds no secret and nothing of the server's.
    expect(seen.env).toEqual(["LANG", "NODE_ENV", "TZ"]);
  });

  it("results: a plain object is structured content plus its JSON text, a string is text", async () => {
    const { result, seen } = await probe(read);
    expect(result.modelText).toBe(JSON.stringify(seen));
    const text = await probe(read, {}, { args: { say: "just words" } });
    expect(text.result).toMatchObject({ isError: false, modelText: "just words" });
    expect(text.result.structuredContent).toBeUndefined();
  });

  it("secrets: get returns a declared value, throws for a declared name without one and for an undeclared name; has checks", async () => {
    const { seen } = await probe(read);
    expect(seen.secrets).toEqual({
      has: [true, false, false],
      apiKeyLength: KEY.length,
      missing: 'throws: secret "MISSING_KEY" has no value for this call',
      undeclared: 'throws: secret "OTHER" is not declared in caplo.yaml secrets',
    });
  });

  it("idempotencyKey reaches write tools only", async () => {
    expect((await probe(read, { idempotencyKey: "key-read" })).seen.idempotencyKey).toBeNull();
    const write = await probe(variants.write!, { idempotencyKey: "key-write-1" });
    expect(write.seen.idempotencyKey).toBe("key-write-1");
    expect(write.result.outcome).toMatchObject({ outcome: "applied" });
  });

  it("subject and requireSubject(): the verified customer for a tool that declares subject, never for one that does not", async () => {
    const declared = await probe(variants.subject!, { subject });
    expect(declared.seen).toMatchObject({ subject, requireSubject: "cust-9" });
    const undeclared = await probe(read, { subject });
    expect(undeclared.seen).toMatchObject({ subject: null, requireSubject: expect.stringMatching(/^throws: this call has no verified customer/) });
  });

  it("canElicit only for a read tool whose call can reach the visitor", async () => {
    const elicit = async () => ({ action: "decline" as const });
    expect((await probe(read)).seen.canElicit).toBe(false);
    expect((await probe(read, {}, { elicit })).seen.canElicit).toBe(true);
    expect((await probe(variants.write!, { idempotencyKey: "key-write-2" }, { elicit })).seen.canElicit).toBe(false);
  });

  it("elicit(): a declared field reaches the visitor and the answer comes back; an undeclared one is refused unasked", async () => {
    const asked: unknown[] = [];
    const elicit = async (request: unknown) => {
      asked.push(request);
      return { action: "accept" as const, content: { size: "M" } };
    };
    const declared = await probe(variants.asking!, {}, { args: { ask: "size" }, elicit });
    expect(declared.seen).toEqual({ canElicit: true, answer: { action: "accept", content: { size: "M" } } });
    expect(asked).toEqual([{ message: "Which size?", requestedSchema: { type: "object", properties: { size: { type: "string" } }, required: ["size"] } }]);
    const undeclared = await probe(variants.asking!, {}, { args: { ask: "email" }, elicit });
    expect(String((undeclared.seen as { answer: unknown }).answer)).toMatch(/^throws: .*elicitation_field_not_declared/);
    expect(asked).toHaveLength(1);
  });

  it("log: lines are kept with the invocation, secret values hidden; calls that cannot be serialised never fail the tool", async () => {
    const { result } = await probe(read);
    expect(result.isError).toBe(false);
    expect(result.logs.map((line) => [line.level, line.message])).toEqual([
      ["info", "probe started"],
      ["warn", "undefined"],
      ["debug", "with the key"],
    ]);
    expect(JSON.stringify(result.logs)).not.toContain(KEY);
    expect(runner.logStore.read(result.invocationId)[0]!.logs).toHaveLength(3);
  });

  it("signal and deadline: the call is aborted at timeoutSeconds and the handler's fetch sees the abort", async () => {
    const { result } = await probe(variants.short!, {}, { args: { hang: true } });
    expect(result, JSON.stringify(result)).toMatchObject({ isError: true, modelText: "The tool timed out after 2 seconds." });
    await hangs[0]!.closed; // the upstream request ended because the sandboxed fetch was aborted
  });

  it("a write that times out is unknown (it may have happened), and its fetch is aborted too", async () => {
    const { result } = await probe(variants.shortWrite!, { idempotencyKey: "key-slow" }, { args: { hang: true } });
    expect(result, JSON.stringify(result)).toMatchObject({ isError: true, outcome: { outcome: "unknown", reason: "The tool timed out after 2 seconds." } });
    await hangs[1]!.closed;
  });
});
