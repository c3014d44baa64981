// An in-memory MCP server registered with the real runner as a kind of target: its calls take the runner's
// own path (argument validation before anything runs, the subject's selector, log routing, outcome mapping,
// the invocation log), and a server that does not list a built tool is refused at load.
import { afterEach, describe, expect, it } from "vitest";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { CALL_META_KEY, EFFECT_META_KEY, EFFECT_OUTCOME_CAPABILITY, modelToolName, type BuiltTool, type ToolPolicy } from "@caplo/shared";
import { MemoryTargets, memoryVersion } from "./memoryTarget.ts";
import { CaploToolRunner, RunnerError } from "./toolRunner.ts";

function notesServer(): McpServer {
  const server = new McpServer({ name: "notes", version: "1.0.0" }, { capabilities: { tools: {}, logging: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } });
  server.registerTool("find", { inputSchema: { text: z.string(), owner: z.string().optional() } }, async (args, extra) => {
    await server.server.sendLoggingMessage({ level: "info", data: `looking for ${args.text}` }, extra.sessionId);
    return { content: [{ type: "text", text: `found ${args.text} of ${args.owner ?? "nobody"}` }] };
  });
  server.registerTool("add", { inputSchema: { text: z.string() } }, async () => ({ content: [{ type: "text", text: "added" }], _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } } }));
  return server;
}

type PolicyWithoutName = ToolPolicy extends infer P ? (P extends unknown ? Omit<P, "name"> : never) : never;

function tool(name: string, policy: PolicyWithoutName, properties: Record<string, unknown>, required: string[]): BuiltTool {
  return { name, modelName: modelToolName("notes", name), description: name, inputSchema: { type: "object", properties, required, additionalProperties: false }, policy: { name, ...policy } as ToolPolicy, hasStatus: false };
}

const notesVersion = (tools: BuiltTool[]) => memoryVersion("notes", tools);

const FIND = tool("find", { effect: "read", timeoutSeconds: 5, subject: { policy: "verified_required", selector: "owner" } }, { text: { type: "string" }, owner: { type: "string" } }, ["text"]);
const ADD = tool("add", { effect: "write", timeoutSeconds: 5, confirmation: "required" }, { text: { type: "string" } }, ["text"]);
const SUBJECT = { id: "customer-1", ref: "ref-1", level: "standard" as const, authTime: new Date(0).toISOString() };

let runner: CaploToolRunner | undefined;
afterEach(async () => {
  await runner?.close();
  runner = undefined;
});

describe("in-memory targets on the real runner", () => {
  it("arguments are validated before the server is asked, the subject's selector is filled by the runner, and the server's log lines come back with the call", async () => {
    const targets = new MemoryTargets({ notes: notesServer });
    runner = new CaploToolRunner({ targetKinds: [targets] });
    const version = notesVersion([FIND, ADD]);
    await runner.load(version);
    const context = { invocationId: "inv-1", secrets: {}, subject: SUBJECT };

    const invalid = await runner.call({ packageVersionId: version.id, tool: "find", args: { text: 5 }, context });
    expect(invalid).toMatchObject({ isError: true });
    expect(invalid.modelText).toMatch(/^Invalid arguments/);
    const chosen = await runner.call({ packageVersionId: version.id, tool: "find", args: { text: "keys", owner: "someone-else" }, context: { ...context, invocationId: "inv-2" } });
    expect(chosen.modelText).toMatch(/is filled by Caplo/);
    expect(targets.requests).toEqual([]);

    const found = await runner.call({ packageVersionId: version.id, tool: "find", args: { text: "keys" }, context: { ...context, invocationId: "inv-3" } });
    expect(found).toMatchObject({ isError: false, modelText: "found keys of ref-1" });
    expect(found.logs.map((line) => line.message)).toEqual(["looking for keys"]);
    expect(targets.requests).toEqual([{ kind: "call", tool: "find", args: { text: "keys", owner: "ref-1" } }]);
    expect(runner.logStore.read("inv-3")).toHaveLength(1);
  });

  it("a write's outcome is mapped from the server's effect metadata, and the call carries its idempotency key", async () => {
    const targets = new MemoryTargets({ notes: notesServer });
    runner = new CaploToolRunner({ targetKinds: [targets] });
    const version = notesVersion([FIND, ADD]);
    await runner.load(version);
    const added = await runner.call({ packageVersionId: version.id, tool: "add", args: { text: "call back" }, context: { invocationId: "inv-4", secrets: {}, idempotencyKey: "key-1" } });
    expect(added.outcome).toEqual({ outcome: "applied", text: "added" });
    expect(targets.requests).toEqual([{ kind: "call", tool: "add", args: { text: "call back" }, idempotencyKey: "key-1" }]);
  });

  it("a version whose server does not list one of its built tools is refused at load with tool_missing, as a package's is", async () => {
    runner = new CaploToolRunner({ targetKinds: [new MemoryTargets({ notes: notesServer })] });
    const gone = tool("forget", { effect: "read", timeoutSeconds: 5 }, {}, []);
    const refused = await runner.load(notesVersion([FIND, gone])).then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(RunnerError);
    expect(refused).toMatchObject({ code: "tool_missing", path: "/tools/forget" });
  });

  it("an error the server answers once the call's time is up is the call's timeout, for a read and for a write (unknown)", async () => {
    // The server's handler gives up at the deadline the call carries, as the SDK's ctx.signal makes a package
    // do, and answers before the runner's own clock has fired: it holds the event loop past the deadline.
    const lateServer = () => {
      const server = new McpServer({ name: "notes", version: "1.0.0" }, { capabilities: { tools: {}, experimental: { ...EFFECT_OUTCOME_CAPABILITY } } });
      const late = async (_args: unknown, extra: { _meta?: Record<string, unknown> }) => {
        const deadline = Date.parse((extra._meta?.[CALL_META_KEY] as { deadline: string }).deadline);
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now() - 50)));
        while (Date.now() < deadline + 20);
        return { isError: true, content: [{ type: "text" as const, text: "The call's deadline has passed" }] };
      };
      server.registerTool("find", { inputSchema: { text: z.string() } }, late);
      server.registerTool("add", { inputSchema: { text: z.string() } }, late);
      return server;
    };
    runner = new CaploToolRunner({ targetKinds: [new MemoryTargets({ notes: lateServer })] });
    const quick = (name: string, effect: "read" | "write") =>
      tool(name, effect === "read" ? { effect, timeoutSeconds: 1 } : { effect, timeoutSeconds: 1, confirmation: "required" }, { text: { type: "string" } }, ["text"]);
    const version = notesVersion([quick("find", "read"), quick("add", "write")]);
    await runner.load(version);
    const read = await runner.call({ packageVersionId: version.id, tool: "find", args: { text: "keys" }, context: { invocationId: "late-1", secrets: {} } });
    expect(read).toMatchObject({ isError: true, modelText: "The tool timed out after 1 seconds." });
    const write = await runner.call({ packageVersionId: version.id, tool: "add", args: { text: "keys" }, context: { invocationId: "late-2", secrets: {}, idempotencyKey: "key-late" } });
    expect(write).toMatchObject({ isError: true, outcome: { outcome: "unknown", reason: "The tool timed out after 1 seconds." } });
  });
});
