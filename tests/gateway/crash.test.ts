// Killing the server process while a write runs leaves the write unknown; after a restart a status check
// records the real outcome, the customer is told over a resumed connection, and the write never ran twice.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import type { ServerFrame } from "@caplo/shared";
import { SqliteStore } from "../../server/src/store/sqliteStore.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { TestClient } from "./support/client.ts";
import { ORIGIN } from "./support/stack.ts";
import { RUN_BUNDLED } from "../support/runBundledPath.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-crash-"));
const children: ChildProcess[] = [];

function startServer(): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [RUN_BUNDLED, join(import.meta.dirname, "support", "serverProcess.ts"), dir], { stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => resolve({ child, port: Number((JSON.parse(line) as { port: string }).port) }));
    child.once("exit", (code) => reject(new Error(`server exited early with ${code}`)));
  });
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

const event = (type: string, state?: string) => (frame: ServerFrame) =>
  frame.t === "event" && frame.message.type === type && (state === undefined || (frame.message as { state?: string }).state === state);

describe("crash while a write runs", () => {
  it("leaves it unknown; after restart a status check records the real outcome and the customer is told", async () => {
    const first = await startServer();
    const customer = await TestClient.open(`ws://127.0.0.1:${first.port}/v1/ws`, ORIGIN);
    const welcome = await customer.hello("shop-agent");
    customer.send({ t: "in", ref: "m", event: { type: "message", text: `please cancel ${ORDERS.hangsAfterApplying}` } });
    const review = await customer.waitFor(event("review"));
    const proposalId = (review as { message: { proposalId: string } }).message.proposalId;
    customer.send({ t: "in", ref: "c", event: { type: "confirm", proposalId } });
    // The tool applied the change in the shop's system and has not answered yet.
    const backendFile = join(dir, "backend.json");
    await until(() => existsSync(backendFile) && readFileSync(backendFile, "utf8").includes(ORDERS.hangsAfterApplying), "the tool to apply");
    const lastSeen = customer.events().at(-1)!.seq;

    first.child.kill("SIGKILL");
    await new Promise((resolve) => first.child.once("exit", resolve));
    await customer.close();
    const look = new SqliteStore(join(dir, "caplo.db"));
    const atCrash = await look.getWrite(proposalId);
    expect(atCrash?.state).toBe("running");
    await look.close();

    const second = await startServer();
    const resumed = await TestClient.open(`ws://127.0.0.1:${second.port}/v1/ws`, ORIGIN);
    await resumed.hello("shop-agent", { token: welcome.resumeToken, after: lastSeen });
    await resumed.waitFor(event("outcome", "unknown"));
    await resumed.waitFor(event("outcome", "applied"), 10_000);
    const outcomes = resumed.events().filter((frame) => frame.message.type === "outcome").map((frame) => (frame.message as { state: string }).state);
    expect(outcomes).toEqual(["unknown", "applied"]);
    const seqs = resumed.events().map((frame) => frame.seq);
    expect(seqs[0]).toBe(lastSeen + 1);
    expect(seqs).toEqual(seqs.map((_, index) => lastSeen + 1 + index));
    await resumed.close();

    second.child.kill("SIGTERM");
    await new Promise((resolve) => second.child.once("exit", resolve));
    const after = new SqliteStore(join(dir, "caplo.db"));
    const write = await after.getWrite(proposalId);
    expect(write).toMatchObject({ state: "applied", idempotencyKey: atCrash!.idempotencyKey, checkCount: 1 });
    expect((await after.listTransitions(proposalId)).map((t) => `${t.from}->${t.to}`)).toEqual([
      "proposed->proposed",
      "proposed->confirmed",
      "confirmed->running",
      "running->unknown",
      "unknown->applied",
    ]);
    await after.close();
    // The change was applied once in the shop's system, under the write's one key.
    const applications = (JSON.parse(readFileSync(backendFile, "utf8")) as { applications: { key: string }[] }).applications;
    expect(applications.map((application) => application.key)).toEqual([atCrash!.idempotencyKey]);
  });
});
