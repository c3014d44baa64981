// The runner's call contract against a real sandboxed MCP server (packages/outcomes and plain):
// validation, context, logs, timeouts, crashes, write outcomes, status checks, files, limits and
// elicitation, each rule at its boundary.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RESULT_BYTES_MAX, type CallSubject } from "@caplo/shared";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { MemoryLogStore } from "../../server/src/runner/logStore.ts";
import { CommandScanner } from "../../server/src/runner/fileScanner.ts";
import type { ToolCallRequest } from "../../server/src/runner/api.ts";
import { TEST_HOST, testVersion } from "./testPackages.ts";

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
const PDF = Buffer.from("%PDF-1.7\n%test\n");
const files = { schemaVersion: 1, title: "Files", fields: [{ path: "/files", label: "Files", display: "plain" }], files: { accept: ["image/png", "application/pdf"], maxBytes: 1024 } };
const subject: CallSubject = { id: "cust-1", ref: "acct-77", level: "standard", authTime: new Date().toISOString() };

const outcomes = testVersion(
  "outcomes",
  [
    { name: "echo", policy: { effect: "read", timeoutSeconds: 5 }, inputSchema: { type: "object", properties: { word: { type: "string", pattern: "^[a-z]+$" } }, additionalProperties: false } },
    { name: "echo_subject", policy: { effect: "read", timeoutSeconds: 5, subject: { policy: "verified_required", selector: "ref" } } },
    { name: "slow", policy: { effect: "read", timeoutSeconds: 1 } },
    { name: "spin", policy: { effect: "read", timeoutSeconds: 1 } },
    { name: "crash", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" } },
    {
      name: "cancel",
      policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" },
      hasStatus: true,
      outputSchema: { type: "object", properties: { cancelled: { type: "boolean" }, key: { type: "string" } }, required: ["cancelled"] },
    },
    { name: "files", policy: { effect: "read", timeoutSeconds: 5, presentation: files } },
    { name: "big", policy: { effect: "read", timeoutSeconds: 5 } },
    { name: "big_object", policy: { effect: "read", timeoutSeconds: 5 } },
    { name: "typed", policy: { effect: "read", timeoutSeconds: 5 }, outputSchema: { type: "object", properties: { orderId: { type: "string" }, status: { type: "string" } }, required: ["orderId", "status"] } },
    { name: "ask", policy: { effect: "read", timeoutSeconds: 5, elicitation: { style: "form", fields: [{ name: "size" }, { name: "color" }, { name: "password" }] } } },
    { name: "ask_questions", policy: { effect: "read", timeoutSeconds: 5, elicitation: { style: "questions", fields: [{ name: "size" }, { name: "color" }] } } },
  ],
  { egress: ["allowed.test"], secrets: ["API_KEY"], effectOutcomes: true },
);
// The same server under other tool names is not needed: ask_questions and echo_subject map onto
// tools the server lists through an alias package directory below.
const plain = testVersion("plain", [{ name: "write", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" } }]);
// The same server claiming a status check it does not advertise (OPERATION_STATUS_CAPABILITY).
const plainWithStatus = testVersion("plain", [{ name: "write", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" }, hasStatus: true }]);

let runner: CaploToolRunner;
let http: Server;
let hangClosed: Promise<void>;
const logStore = new MemoryLogStore();
let counter = 0;

function request(tool: string, args: unknown, extra: Partial<ToolCallRequest["context"]> = {}, more: Partial<ToolCallRequest> = {}): ToolCallRequest {
  counter += 1;
  return { packageVersionId: outcomes.id, tool, args, context: { invocationId: `inv-${counter}`, secrets: { API_KEY: "sk-live-abcdef123456", OTHER: "not-declared-value" }, ...extra }, ...more };
}

beforeAll(async () => {
  let signalClosed: () => void = () => undefined;
  hangClosed = new Promise((resolve) => (signalClosed = resolve));
  http = createHttpServer((req) => {
    // Never answers: the only way this request ends is the handler's fetch being aborted.
    if (req.url === "/hang") req.socket.once("close", () => signalClosed());
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as { port: number }).port;
  runner = new CaploToolRunner({ hostModule: TEST_HOST, egressResolve: `allowed.test=127.0.0.1:${port}`, logStore });
  // The aliases (echo_subject, ask_questions) are not listed by the server: load checks listed tools,
  // so they live in a version of their own that the test registers without that check.
  await runner.load({ ...outcomes, tools: outcomes.tools.filter((tool) => !["echo_subject", "ask_questions"].includes(tool.name)) });
  await runner.unload(outcomes.id);
  await runner.load({ ...outcomes, tools: outcomes.tools.filter((tool) => !["echo_subject", "ask_questions"].includes(tool.name)) });
  await runner.load(plain);
  await runner.load(plainWithStatus);
}, 60_000);

afterAll(async () => {
  await runner?.close();
  http?.closeAllConnections();
  await new Promise((resolve) => http?.close(resolve));
});

describe("arguments and context", () => {
  it("refuses invalid arguments before the handler runs, naming the path", async () => {
    const result = await runner.call(request("echo", { word: "ABC" }));
    expect(result.isError).toBe(true);
    expect(result.modelText).toContain("/word");
    expect(result.logs).toEqual([]);
    const extra = await runner.call(request("echo", { invented: 1 }));
    expect(extra.modelText).toContain("/invented is not allowed");
  });

  it("passes the per-call context in _meta: ids, deadline, declared secrets only, no idempotency key for reads", async () => {
    const before = Date.now();
    const result = await runner.call(request("echo", { word: "hi" }, { conversationId: "c1", turnId: "t1", workspaceId: "w1", idempotencyKey: "k-should-not-pass" }));
    expect(result.isError).toBe(false);
    const seen = result.structuredContent as Record<string, unknown>;
    expect(seen).toMatchObject({ invocationId: result.invocationId, conversationId: "c1", turnId: "t1", workspaceId: "w1", packageVersionId: outcomes.id, canElicit: false, secretNames: ["API_KEY"] });
    expect(seen.idempotencyKey).toBeUndefined();
    const deadline = Date.parse(String(seen.deadline));
    expect(deadline).toBeGreaterThanOrEqual(before + 5000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 5000);
  });

  it("keeps secret values out of model text and logs, and keeps log lines with the invocation", async () => {
    const result = await runner.call(request("echo", { word: "hi" }));
    expect(result.modelText).toBe("key is [secret:API_KEY]");
    expect(JSON.stringify(result)).not.toContain("sk-live-abcdef123456");
    expect(result.logs.map((line) => line.message)).toEqual(["echo with key [secret:API_KEY]"]);
    const stored = logStore.read(result.invocationId);
    expect(stored).toHaveLength(1);
    expect(stored[0]!.logs[0]!.message).toBe("echo with key [secret:API_KEY]");
  });
});

describe("timeouts and crashes", () => {
  it("aborts a call at timeoutSeconds, and the handler's fetch sees the abort", async () => {
    const result = await runner.call(request("slow", {}));
    expect(result.isError).toBe(true);
    expect(result.modelText).toBe("The tool timed out after 1 seconds.");
    expect(result.outcome).toBeUndefined();
    await hangClosed; // the upstream request was closed by the aborted fetch
    expect(result.logs.map((line) => line.message)).toContain("slow started");
  });

  it("restarts a process stuck in a loop after its timeout", async () => {
    const starts = runner.starts(outcomes.id);
    const result = await runner.call(request("spin", {}));
    expect(result.modelText).toContain("timed out");
    // No wait: the timed-out call answers only after its stuck process was replaced.
    const after = await runner.call(request("echo", { word: "back" }));
    expect(after.isError).toBe(false);
    expect(runner.starts(outcomes.id)).toBe(starts + 1);
  });

  it("a write whose process crashes is unknown, and the next call gets a fresh process", async () => {
    const result = await runner.call(request("crash", {}, { idempotencyKey: "k-crash" }));
    expect(result.outcome).toMatchObject({ outcome: "unknown" });
    const after = await runner.call(request("echo", { word: "again" }));
    expect(after.isError).toBe(false);
  });
});

describe("write outcomes", () => {
  const write = (mode: string) => runner.call(request("cancel", { mode }, { idempotencyKey: "idem-1" }));

  it("a returned value is applied, and the write gets its idempotency key", async () => {
    const result = await write("applied");
    expect(result.outcome).toEqual({ outcome: "applied", text: expect.any(String), structuredContent: { cancelled: true, key: "idem-1" } });
  });
  it("rejected is not applied with the message", async () => {
    expect((await write("not_applied")).outcome).toEqual({ outcome: "not_applied", message: "Order already shipped." });
  });
  it("pending keeps the operationRef; 256 characters is the longest accepted", async () => {
    expect((await write("pending")).outcome).toEqual({ outcome: "pending", operationRef: "op_123", message: "Processing." });
    expect((await write("pending_max_ref")).outcome).toMatchObject({ outcome: "pending", operationRef: "x".repeat(256) });
  });
  it("outputSchema checks an applied write's result, not a pending write's (which has no result yet)", async () => {
    expect((await write("applied_off_schema")).outcome).toMatchObject({ outcome: "unknown", reason: expect.stringContaining("/cancelled must be boolean") });
    expect((await write("applied_bare")).outcome).toMatchObject({ outcome: "unknown", reason: expect.stringContaining("no structured content") });
    const pendingWithContent = await write("pending_with_content");
    expect(pendingWithContent.outcome).toEqual({ outcome: "pending", operationRef: "op_124", message: "Processing." });
    // Unchecked against outputSchema, it is not passed on as the tool's result.
    expect(pendingWithContent.structuredContent).toBeUndefined();
  });
  it("an invalid operationRef (control character, 257 characters) leaves the write unknown", async () => {
    expect((await write("pending_bad_ref")).outcome).toMatchObject({ outcome: "unknown" });
    expect((await write("pending_long_ref")).outcome).toMatchObject({ outcome: "unknown" });
  });
  it("a throw, an error result without metadata, or contradictory metadata is unknown", async () => {
    expect((await write("throw")).outcome).toMatchObject({ outcome: "unknown" });
    expect((await write("error")).outcome).toMatchObject({ outcome: "unknown", reason: "upstream 500" });
    expect((await write("error_claims_applied")).outcome).toMatchObject({ outcome: "unknown" });
    expect((await write("bad_meta")).outcome).toMatchObject({ outcome: "unknown" });
  });
  it("step-up applies nothing and is reported as such", async () => {
    const result = await write("step_up");
    expect(result.outcome).toEqual({ outcome: "step_up_required", stepUp: { level: "high", maxAuthAgeSeconds: 300 } });
    expect(result.stepUp).toEqual({ level: "high", maxAuthAgeSeconds: 300 });
  });
  it("without the capability, metadata is ignored and an error result from a write is unknown", async () => {
    const call = (mode: string) => runner.call({ packageVersionId: plain.id, tool: "write", args: { mode }, context: { invocationId: `plain-${mode}`, secrets: {}, idempotencyKey: "k" } });
    expect((await call("error")).outcome).toMatchObject({ outcome: "unknown" });
    expect((await call("claims_not_applied")).outcome).toMatchObject({ outcome: "unknown" });
    expect((await call("ok")).outcome).toMatchObject({ outcome: "applied" });
  });
});

describe("status checks", () => {
  const check = (operationRef: string) =>
    runner.checkStatus({ packageVersionId: outcomes.id, tool: "cancel", operationRef, context: { invocationId: `st-${operationRef}`, secrets: {}, idempotencyKey: "idem-orig" } });

  it("sends the original idempotency key and maps applied, rejected and pending", async () => {
    expect(await check("op-applied")).toMatchObject({ outcome: "applied", structuredContent: { cancelled: true, key: "idem-orig" } });
    expect(await check("op-rejected")).toEqual({ outcome: "not_applied", message: "It was not cancelled." });
    expect(await check("op-pending")).toMatchObject({ outcome: "pending", operationRef: "op-pending" });
  });
  it("is asked only of a write tool with a status check on a server that advertises operation status", async () => {
    const ask = (packageVersionId: string, tool: string) => runner.checkStatus({ packageVersionId, tool, operationRef: "op-applied", context: { invocationId: `st-${packageVersionId}-${tool}`, secrets: {}, idempotencyKey: "k" } });
    expect(await ask(outcomes.id, "echo")).toEqual({ outcome: "unknown", reason: "status checks are for write tools" });
    expect(await ask(plain.id, "write")).toEqual({ outcome: "unknown", reason: "the tool has no status check" });
    expect(await ask(plainWithStatus.id, "write")).toEqual({ outcome: "unknown", reason: "the server does not advertise operation status" });
    expect(await ask(outcomes.id, "missing")).toMatchObject({ outcome: "unknown", reason: expect.stringContaining("is not loaded") });
  });
  it("any other answer or a throw leaves the write unknown", async () => {
    expect(await check("op-weird")).toMatchObject({ outcome: "unknown" });
    expect(await check("op-throw")).toMatchObject({ outcome: "unknown", reason: expect.stringContaining("provider cannot tell") });
  });
});

describe("results: files, size, output schema", () => {
  const file = (name: string, bytes: Buffer, mimeType?: string) => ({ uri: `file:///${name}`, blob: bytes.toString("base64"), ...(mimeType && { mimeType }) });

  it("takes files out of the result: proven by magic bytes, in accept, under maxBytes, at most 3", async () => {
    const fake = Buffer.from("GIF89a-but-not-accepted");
    const big = Buffer.concat([PNG, Buffer.alloc(1025 - PNG.length)]);
    const exact = Buffer.concat([PNG, Buffer.alloc(1024 - PNG.length)]);
    const result = await runner.call(
      request("files", {
        files: [
          file("a.png", PNG, "image/png"),
          file("b.pdf", PDF),
          file("c.png", PDF, "image/png"),
          file("d.gif", fake, "image/gif"),
          file("e.exe", Buffer.from("MZ\x90\x00")),
          file("f.png", big),
          file("g.png", exact),
          file("h.png", PNG),
        ],
      }),
    );
    expect(result.files.map((delivered) => [delivered.name, delivered.mimeType, delivered.size])).toEqual([
      ["a.png", "image/png", PNG.length],
      ["b.pdf", "application/pdf", PDF.length],
      ["g.png", "image/png", 1024],
    ]);
    expect(Buffer.from(result.files[0]!.bytes).equals(PNG)).toBe(true);
    expect(result.modelText).not.toContain(PNG.toString("base64"));
    expect(result.modelText).toContain('File "c.png" was refused');
    expect(result.modelText).toContain('File "d.gif" was refused and not delivered: its content is image/gif, which the tool does not accept');
    expect(result.modelText).toContain('"e.exe" was refused');
    expect(result.modelText).toContain('"f.png" was refused and not delivered: 1025 bytes is over');
    expect(result.modelText).toContain('"h.png" was refused and not delivered: at most 3 files');
  });

  it("files are scanned: built-in checks refuse a PDF with JavaScript and an image named as another type; the operator's scanner refuses a threat; each is listed as not delivered", async () => {
    const active = Buffer.from("%PDF-1.7\n1 0 obj << /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >> endobj\n%%EOF\n");
    const request1 = request("files", { files: [file("active.pdf", active, "application/pdf"), file("photo.jpg", PNG, "image/png"), file("fine.pdf", PDF, "application/pdf")] });
    const checked = await runner.call(request1);
    expect(checked.files.map((delivered) => delivered.name)).toEqual(["fine.pdf"]);
    expect(checked.modelText).toContain('[File "active.pdf" was refused and not delivered: the PDF contains JavaScript.]');
    expect(checked.modelText).toContain('[File "photo.jpg" was refused and not delivered: its name says image/jpeg but its content is image/png.]');
    expect(checked.undelivered).toEqual([{ name: "active.pdf", code: "file_unsafe" }, { name: "photo.jpg", code: "file_type_mismatch" }]);

    const dir = mkdtempSync(join(tmpdir(), "caplo-scan-cmd-"));
    const script = join(dir, "scan.sh");
    writeFileSync(script, '#!/bin/sh\ncase "$(cat)" in *EICAR-STANDARD*) echo "Eicar-Test-Signature"; exit 1;; esac\nexit 0\n');
    chmodSync(script, 0o755);
    const scanned = new CaploToolRunner({ hostModule: TEST_HOST, fileScanner: new CommandScanner(script), maxProcesses: 1 });
    try {
      await scanned.load({ ...outcomes, tools: outcomes.tools.filter((tool) => tool.name === "files") });
      const eicar = Buffer.from("%PDF-1.4\nX5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*\n");
      const result = await scanned.call(request("files", { files: [file("eicar.pdf", eicar, "application/pdf"), file("fine.pdf", PDF, "application/pdf")] }));
      expect(result.files.map((delivered) => delivered.name)).toEqual(["fine.pdf"]);
      expect(result.modelText).toContain('[File "eicar.pdf" was refused and not delivered: the file scanner refused it (Eicar-Test-Signature).]');
      expect(result.undelivered).toEqual([{ name: "eicar.pdf", code: "file_threat" }]);
    } finally {
      await scanned.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a result of exactly 256 KiB passes and one byte more fails", async () => {
    const overhead = JSON.stringify({ content: [{ type: "text", text: "" }] }).length;
    const ok = await runner.call(request("big", { bytes: RESULT_BYTES_MAX - overhead }));
    expect(ok.isError).toBe(false);
    const over = await runner.call(request("big", { bytes: RESULT_BYTES_MAX - overhead + 1 }));
    expect(over.isError).toBe(true);
    expect(over.modelText).toContain("over the limit of 262144 bytes");
  });

  it("a structured result is counted once, not with its JSON text: 137 KiB passes, exactly 256 KiB passes, one byte more fails", async () => {
    const medium = await runner.call(request("big_object", { bytes: 137 * 1024 }));
    expect(medium.isError, medium.modelText.slice(0, 200)).toBe(false);
    expect((medium.structuredContent as { data: string }).data).toHaveLength(137 * 1024);
    const overhead = JSON.stringify({ content: [], structuredContent: { data: "" } }).length;
    const at = await runner.call(request("big_object", { bytes: RESULT_BYTES_MAX - overhead }));
    expect(at.isError, at.modelText.slice(0, 200)).toBe(false);
    const over = await runner.call(request("big_object", { bytes: RESULT_BYTES_MAX - overhead + 1 }));
    expect(over).toMatchObject({ isError: true, modelText: `The tool's result is ${RESULT_BYTES_MAX + 1} bytes, over the limit of ${RESULT_BYTES_MAX} bytes (256 KiB).` });
  });

  it("a result that does not match outputSchema fails the call", async () => {
    const ok = await runner.call(request("typed", { valid: true }));
    expect(ok.structuredContent).toEqual({ orderId: "SO-1002", status: "shipped" });
    const bad = await runner.call(request("typed", { valid: false }));
    expect(bad.isError).toBe(true);
    expect(bad.modelText).toContain("/status must be string");
  });
});

describe("elicitation", () => {
  const schema = (properties: Record<string, unknown>, required?: string[]) => ({ type: "object", properties, ...(required && { required }) });

  it("passes a declared form request to the visitor and returns only the requested fields", async () => {
    const asked: unknown[] = [];
    const result = await runner.call(
      request("ask", { schema: schema({ size: { type: "string" } }) }, {}, {
        elicit: async (question) => {
          asked.push(question);
          return { action: "accept", content: { size: "M", injected: "x" } };
        },
      }),
    );
    expect(asked).toEqual([{ message: "Which size?", requestedSchema: { type: "object", properties: { size: { type: "string" } } } }]);
    expect(result.structuredContent).toEqual({ answers: [{ action: "accept", content: { size: "M" } }] });
  });

  it("refuses undeclared and credential fields without asking the visitor", async () => {
    let asked = 0;
    const elicit = async () => {
      asked += 1;
      return { action: "decline" as const };
    };
    const undeclared = await runner.call(request("ask", { schema: schema({ email: { type: "string" } }) }, {}, { elicit }));
    expect(JSON.stringify(undeclared.structuredContent)).toContain("elicitation_field_not_declared");
    const credential = await runner.call(request("ask", { schema: schema({ password: { type: "string" } }) }, {}, { elicit }));
    expect(JSON.stringify(credential.structuredContent)).toContain("elicitation_credential");
    const disguised = await runner.call(request("ask", { schema: schema({ color: { type: "string", title: "Card number" } }) }, {}, { elicit }));
    expect(JSON.stringify(disguised.structuredContent)).toContain("elicitation_credential");
    expect(asked).toBe(0);
  });

  it("without an elicit callback the tool cannot elicit", async () => {
    const result = await runner.call(request("ask", { schema: schema({ size: { type: "string" } }) }));
    expect(JSON.stringify(result.structuredContent)).toContain("elicitation is not available for this call");
  });
});

describe("subject", () => {
  it("refuses a subject tool without a verified customer", async () => {
    await runner.unload(`${outcomes.id}-subject`);
    await runner.addTarget(await subjectTarget());
    const result = await runner.call({ ...request("echo_subject", {}), packageVersionId: `${outcomes.id}-subject` });
    expect(result.isError).toBe(true);
    expect(result.modelText).toContain("verified customer");
  });

  it("fills the selector from the subject and refuses it from the model", async () => {
    const id = `${outcomes.id}-subject`;
    const filled = await runner.call({ ...request("echo_subject", {}, { subject }), packageVersionId: id });
    expect(filled.structuredContent).toMatchObject({ args: { ref: "acct-77" }, subject: { id: "cust-1" } });
    const injected = await runner.call({ ...request("echo_subject", { ref: "acct-1" }, { subject }), packageVersionId: id });
    expect(injected.isError).toBe(true);
    expect(injected.modelText).toContain("/ref is filled by Caplo");
  });
});

/** A target that routes the policy of echo_subject onto the server's echo tool. */
async function subjectTarget() {
  const base = outcomes.tools.find((tool) => tool.name === "echo_subject")!;
  const inner = await runner.processOf(outcomes.id);
  if (!inner) throw new Error("outcomes process not running");
  return {
    id: `${outcomes.id}-subject`,
    tools: [{ ...base, name: "echo_subject" }],
    effectOutcomes: true,
    secretNames: ["API_KEY"],
    session: async () => {
      const process = (await runner.processOf(outcomes.id))!;
      // Rename the call on its way out: the server knows the tool as echo.
      const client = Object.create(process.client) as typeof process.client;
      client.request = ((req: { params: { name: string } }, ...rest: unknown[]) =>
        process.client.request({ ...req, params: { ...req.params, name: "echo" } } as never, ...(rest as [never]))) as typeof client.request;
      return { client, routes: process.routes, recover: async () => undefined };
    },
    close: async () => undefined,
  };
}
