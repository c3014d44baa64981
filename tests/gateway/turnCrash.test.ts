// Killing the server process while a read turn is held loses no turn: the customer's message was stored
// with the turn owed to it, and after a restart on the same SQLite file the turn runs again, once. A read
// that was cut short after it was shown working is recorded as interrupted (its progress ended), the model
// answers, and the owed turn is cleared so no later start runs it again. A read that answered at once is held
// with its step until the turn's answer is stored: killed then, the store holds only the customer's message,
// and the turn runs again from it, read included, so the customer sees the read and the answer once.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { INTERRUPTED_NOTE } from "../../server/src/engine/engine.ts";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { TestClient } from "./support/client.ts";
import { ORIGIN, SLOW_ANSWER } from "./support/stack.ts";
import { RUN_BUNDLED } from "../support/runBundledPath.ts";

const dirs: string[] = [];
const children: ChildProcess[] = [];

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "caplo-turn-crash-"));
  dirs.push(dir);
  return dir;
}

function startServer(dir: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [RUN_BUNDLED, join(import.meta.dirname, "support", "serverProcess.ts"), dir], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => resolve({ child, port: Number((JSON.parse(line) as { port: string }).port) }));
    child.once("exit", (code) => reject(new Error(`server exited early with ${code}`)));
  });
}

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const progress = (state: "start" | "end") => (frame: ServerFrame) => frame.t === "event" && frame.message.type === "progress" && frame.message.state === state;
const agentText = (frame: ServerFrame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent";

describe("crash while a read turn is held", () => {
  it("runs the turn again once after a restart on the same store: the customer gets the reply, the read is recorded as interrupted", async () => {
    const dir = scratch();
    const first = await startServer(dir);
    const customer = await TestClient.open(`ws://127.0.0.1:${first.port}/v1/ws`, ORIGIN);
    const welcome = await customer.hello("shop-agent");
    customer.send({ t: "in", ref: "m", event: { type: "message", text: `where is my order ${ORDERS.readHangs}?` } });
    // The read's progress start is stored before the tool is called; the tool never answers.
    const start = await customer.waitFor(progress("start"));
    const callId = (start as { message: { callId: string } }).message.callId;
    const lastSeen = customer.events().at(-1)!.seq;

    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    await customer.close();
    const look = new SqliteStore(join(dir, "caplo.db"));
    expect((await look.listOwedTurns("crash-node", 10)).map((turn) => turn.conversationId)).toEqual([welcome.conversationId]);
    await look.close();

    const second = await startServer(dir);
    const resumed = await TestClient.open(`ws://127.0.0.1:${second.port}/v1/ws`, ORIGIN);
    await resumed.hello("shop-agent", { token: welcome.resumeToken, after: lastSeen });
    await resumed.waitFor(agentText);
    await resumed.close();
    second.child.kill("SIGTERM");
    await new Promise((resolve) => second.child.once("exit", resolve));

    const after = new SqliteStore(join(dir, "caplo.db"));
    // Everything after the crash, in order: the interrupted read's progress ends, then one answer.
    const events = await after.listEvents(welcome.conversationId, lastSeen);
    expect(events.map((event) => event.message.type)).toEqual(["progress", "text"]);
    expect(events[0]!.message).toMatchObject({ type: "progress", callId, state: "end" });
    expect(events[1]!.message).toMatchObject({ from: "agent", text: "Your order is on its way." });
    expect(resumed.events().filter(agentText)).toHaveLength(1);
    // The transcript: the message, the step that called the read, the read's interrupted result, the answer; nothing owed any more.
    const transcript = (await after.listTranscript(welcome.conversationId)).map((entry) => entry.message);
    expect(transcript.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(transcript[2]).toMatchObject({ role: "tool", toolCallId: callId, content: INTERRUPTED_NOTE });
    expect(await after.listOwedTurns("crash-node", 10)).toEqual([]);
    await after.close();
  });

  it("killed while a read that answered at once is held (the model writing its answer): the turn runs again from the customer's message, and the customer gets the read and the answer once", async () => {
    const dir = scratch();
    const first = await startServer(dir);
    const customer = await TestClient.open(`ws://127.0.0.1:${first.port}/v1/ws`, ORIGIN);
    const welcome = await customer.hello("shop-agent");
    customer.send({ t: "in", ref: "m", event: { type: "message", text: `slowly, order ${ORDERS.applied}` } });
    // The read has answered and the model is writing the answer: its first word streams as a preview.
    await customer.waitFor((frame) => frame.t === "delta", 20_000);
    const lastSeen = customer.events().at(-1)!.seq;
    // The preview is all the customer got of the turn: no stored event of the read or the answer.
    expect(customer.events().map((event) => event.message.type)).toEqual(["text"]);

    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    await customer.close();
    const look = new SqliteStore(join(dir, "caplo.db"));
    // The held step was never stored: the log ends with the customer's message, which still owes its turn.
    expect((await look.listEvents(welcome.conversationId, 0)).map((event) => event.message.type)).toEqual(["text"]);
    expect((await look.listTranscript(welcome.conversationId)).map((entry) => entry.message.role)).toEqual(["user"]);
    expect((await look.listOwedTurns("crash-node", 10)).map((turn) => turn.conversationId)).toEqual([welcome.conversationId]);
    await look.close();

    const second = await startServer(dir);
    const resumed = await TestClient.open(`ws://127.0.0.1:${second.port}/v1/ws`, ORIGIN);
    await resumed.hello("shop-agent", { token: welcome.resumeToken, after: lastSeen });
    await resumed.waitFor(agentText, 20_000);
    await resumed.close();
    second.child.kill("SIGTERM");
    await new Promise((resolve) => second.child.once("exit", resolve));

    const after = new SqliteStore(join(dir, "caplo.db"));
    // The turn ran again from the message: the read (again), its result and one answer, each stored once.
    const events = await after.listEvents(welcome.conversationId, lastSeen);
    expect(events.map((event) => event.message.type)).toEqual(["progress", "progress", "result", "text"]);
    expect(events[3]!.message).toMatchObject({ from: "agent", text: SLOW_ANSWER });
    expect(resumed.events().map((event) => event.seq)).toEqual(events.map((event) => event.seq));
    const transcript = (await after.listTranscript(welcome.conversationId)).map((entry) => entry.message);
    expect(transcript.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(transcript[2]!.content).toContain(ORDERS.applied);
    expect(await after.listOwedTurns("crash-node", 10)).toEqual([]);
    await after.close();
  }, 60_000); // two server starts and the model's pause, twice
});
