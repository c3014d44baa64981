// Killing the server in the middle of many concurrent read turns (events group-committed, several per
// transaction): every event a customer was sent is in the store under the same seq, and a resume after the
// restart delivers the rest exactly once, in order; the conversation then goes on.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { ORIGIN } from "./support/stack.ts";
import { RUN_BUNDLED } from "../support/runBundledPath.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-crash-load-"));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function startServer(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [RUN_BUNDLED, join(import.meta.dirname, "support", "serverProcess.ts"), dir], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", (line) => resolve({ child, port: Number((JSON.parse(line) as { port: string }).port) }));
    child.once("exit", (code) => reject(new Error(`server exited early with ${code}`)));
  });
}

type EventFrame = { t: "event"; seq: number; message: { id: string; type: string; from?: string } };

/** A customer that sends a turn whenever the last one was answered, recording every event it is sent. */
class Customer {
  readonly events: EventFrame[] = [];
  token = "";
  conversationId = "";
  private ws!: WebSocket;
  private turns = 0;
  private onAgentText: (() => void) | undefined;

  async connect(port: number, resume?: { token: string; after: number }): Promise<void> {
    this.ws = new WebSocket(`ws://127.0.0.1:${port}/v1/ws`, { origin: ORIGIN });
    await new Promise<void>((resolve, reject) => {
      this.ws.once("error", reject);
      this.ws.once("open", () => this.ws.send(JSON.stringify({ t: "hello", v: 1, agent: "shop-agent", capabilities: {}, ...(resume && { resume }) })));
      this.ws.on("message", (data) => {
        const frame = JSON.parse(String(data)) as { t: string; conversationId?: string; resumeToken?: string; seq?: number; message?: EventFrame["message"] };
        if (frame.t === "welcome") {
          this.token = frame.resumeToken!;
          this.conversationId = frame.conversationId!;
          resolve();
        } else if (frame.t === "event") {
          this.events.push(frame as EventFrame);
          if (frame.message?.type === "text" && frame.message.from === "agent") this.onAgentText?.();
        }
      });
      this.ws.on("error", () => undefined); // the server is killed under it
    });
  }

  /** Turns one after another until stopped (at most 15: within the connection's frame burst). */
  async talk(stop: () => boolean): Promise<void> {
    while (!stop() && this.turns < 15 && this.ws.readyState === WebSocket.OPEN) {
      const answered = new Promise<void>((resolve) => {
        this.onAgentText = resolve;
        this.ws.once("close", () => resolve());
      });
      this.ws.send(JSON.stringify({ t: "in", ref: `r${this.turns}`, event: { type: "message", text: `where is order SO-${1001 + (this.turns % 3)}` } }));
      this.turns += 1;
      await answered;
    }
  }

  /** One more turn: resolves with the agent's answer. */
  async turn(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.onAgentText = resolve;
      this.ws.send(JSON.stringify({ t: "in", ref: "after", event: { type: "message", text: "where is order SO-1001" } }));
    });
  }

  close(): void {
    this.ws.terminate();
  }
}

describe("crash during many concurrent turns", () => {
  it("every event sent was stored under its seq; resuming delivers the rest once, in order", async () => {
    const first = await startServer();
    const customers = Array.from({ length: 16 }, () => new Customer());
    await Promise.all(customers.map((customer) => customer.connect(first.port)));
    let killed = false;
    const talking = customers.map((customer) => customer.talk(() => killed));
    // Kill it while turns are in flight: after some events, at no particular point of any turn.
    while (customers.reduce((sum, customer) => sum + customer.events.length, 0) < 150) await new Promise((resolve) => setTimeout(resolve, 5));
    first.child.kill("SIGKILL");
    killed = true;
    await new Promise((resolve) => first.child.once("exit", resolve));
    await Promise.all(talking);
    for (const customer of customers) customer.close();

    // Everything a customer was sent is stored, under the seq it was sent with (stored before it was sent).
    const look = new SqliteStore(join(dir, "caplo.db"));
    const lastSent: number[] = [];
    for (const customer of customers) {
      const seqs = customer.events.map((event) => event.seq);
      expect(seqs).toEqual(seqs.map((_, index) => index + 1)); // in order, no gap, no repeat
      const stored = await look.listEvents(customer.conversationId, 0);
      expect(stored.slice(0, seqs.length).map((event) => [event.seq, event.message.id])).toEqual(customer.events.map((event) => [event.seq, event.message.id]));
      lastSent.push(seqs.at(-1) ?? 0);
    }
    await look.close();

    const second = await startServer();
    try {
      const resumed = customers.map(() => new Customer());
      await Promise.all(resumed.map((customer, index) => customer.connect(second.port, { token: customers[index]!.token, after: lastSent[index]! })));
      const check = new SqliteStore(join(dir, "caplo.db"));
      for (const [index, customer] of resumed.entries()) {
        const stored = await check.listEvents(customer.conversationId, 0);
        const missed = stored.length - lastSent[index]!;
        // What was stored but not yet sent at the crash arrives now, once, in order, right after the last seen.
        const deadline = Date.now() + 5000;
        while (customer.events.length < missed && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
        expect(customer.events.map((event) => event.seq)).toEqual(stored.slice(lastSent[index]!).map((event) => event.seq));
        expect(customer.events.map((event) => event.message.id)).toEqual(stored.slice(lastSent[index]!).map((event) => event.message.id));
      }
      await check.close();
      // The conversations go on after the restart.
      await Promise.all(resumed.map((customer) => customer.turn()));
      for (const [index, customer] of resumed.entries()) {
        const seqs = customer.events.map((event) => event.seq);
        expect(seqs).toEqual(seqs.map((_, offset) => lastSent[index]! + 1 + offset));
        expect(customer.events.at(-1)?.message).toMatchObject({ type: "text", from: "agent" });
      }
      for (const customer of resumed) customer.close();
    } finally {
      second.child.kill("SIGTERM");
      await new Promise((resolve) => second.child.once("exit", resolve));
    }
  }, 30_000);
});
