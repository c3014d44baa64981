// An agent answers only on the channels its agent.yaml lists: a signed WhatsApp message to an agent that
// lists only `web` opens no conversation and gets no reply (not even a proposal), and says why in the log;
// `caplo serve` refuses to start with such an agent for a configured channel, naming the variable, the
// rule and what to write, and `caplo serve --check-channels` says the same or prints the webhook URLs.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { parseAgentConfig } from "@caplo/shared";
import { createRelease } from "../../server/src/agents/release.ts";
import { FileReleaseStore } from "../../server/src/agents/releaseStore.ts";
import { checkChannels } from "../../server/src/app/serveChannels.ts";
import { parseServeArgs, startServe } from "../../server/src/cli/serve.ts";
import type { ToolRunner } from "../../server/src/runner/api.ts";
import { CANCEL } from "../engine/support/harness.ts";
import { ORDERS } from "../engine/support/shopTools.ts";
import { channelBench, type Bench } from "./support.ts";

let b: Bench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});
const dir = mkdtempSync(join(tmpdir(), "caplo-listed-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("an agent answers only on the channels it lists", () => {
  it("a signed WhatsApp message to an agent listing only web gets nothing back: no conversation, no proposal, logged why", async () => {
    b = await channelBench({ platform: "whatsapp", rules: [{ when: /cancel/i, replies: [{ text: "Here is what I will do.", toolCalls: [CANCEL(ORDERS.applied)] }] }], agentConfig: () => ({ channels: { web: {} } }) });
    const bench = b;
    await bench.say("Please cancel my order");
    await bench.waitFor(async () => (await bench.store.listInbound("failed")).length === 1, "the message to be set aside");
    await bench.service.idle();
    await bench.h.engine.idle();
    expect(bench.received()).toEqual([]);
    expect(await bench.store.listBindings()).toEqual([]);
    const [row] = await bench.store.listInbound("failed");
    expect(row!.error).toContain('agent shop-agent does not list whatsapp under channels in its agent.yaml');
    expect(bench.logs.join("\n")).toContain("does not list whatsapp");
    expect(bench.logs.join("\n")).not.toContain(bench.customer);
  });
});

describe("caplo serve with a channel its agent does not list", () => {
  const runner: ToolRunner = { load: async () => undefined, call: async () => Promise.reject(new Error("no tools")), checkStatus: async () => ({ outcome: "unknown", reason: "no tools" }), close: async () => undefined };
  const twilioEnv = {
    CAPLO_PUBLIC_URL: "https://caplo.shop.example",
    CAPLO_TWILIO_ACCOUNT_SID: `AC${"a".repeat(32)}`,
    CAPLO_TWILIO_AUTH_TOKEN: "b".repeat(32),
    CAPLO_WHATSAPP_FROM: "whatsapp:+14155238886",
  };
  const publish = async (name: string, channels: Record<string, object>) => {
    const config = parseAgentConfig({ apiVersion: "v1", kind: "Agent", name, instructions: "Be brief.", origins: ["https://site.example"], channels });
    if (!config.ok) throw new Error(JSON.stringify(config.issues));
    const release = createRelease(config.agent, [], new Date("2026-01-01T00:00:00Z"));
    if (!release.ok) throw new Error(JSON.stringify(release.issues));
    await new FileReleaseStore(join(dir, "releases")).put(release.release);
  };
  const options = (agent: string, env: Record<string, string>) => {
    const parsed = parseServeArgs(["--port", "0", "--agent", agent, "--db", join(dir, `${agent}.db`), "--releases", join(dir, "releases")], env);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return parsed.options;
  };

  it("refuses to start, naming the variable that chose the agent and what to write in agent.yaml", async () => {
    await publish("web-only", { web: {} });
    const started = await startServe({ ...options("web-only", twilioEnv), runner }, () => undefined);
    expect(started).toMatchObject({ ok: false, error: { code: "channel_not_listed", path: "--agent" } });
    expect(started.ok ? "" : started.error.message).toContain('agent web-only (chosen by --agent) does not list whatsapp under channels in its agent.yaml');
    expect(started.ok ? "" : started.error.message).toContain('add "whatsapp: {}" under channels');
    const viaVariable = await startServe({ ...options("web-only", { ...twilioEnv, CAPLO_WHATSAPP_AGENT: "web-only" }), runner }, () => undefined);
    expect(viaVariable).toMatchObject({ ok: false, error: { code: "channel_not_listed", path: "CAPLO_WHATSAPP_AGENT" } });
  });

  it("--check-channels prints the problem, or the webhook URLs to register, and starts nothing", async () => {
    await publish("web-only", { web: {} });
    await publish("whatsapp-shop", { web: {}, whatsapp: {} });
    const lines: string[] = [];
    expect(await checkChannels(options("web-only", twilioEnv), (line) => void lines.push(line))).toBe(1);
    expect(lines.join("\n")).toContain("channel_not_listed at --agent");
    lines.length = 0;
    expect(await checkChannels(options("whatsapp-shop", { ...twilioEnv, CAPLO_META_VERIFY_TOKEN: "has spaces in it, not allowed", CAPLO_MESSENGER_PAGE_TOKEN: "EAAG".padEnd(40, "x"), CAPLO_META_APP_SECRET: "c".repeat(32) }), (line) => void lines.push(line))).toBe(1);
    expect(lines.join("\n")).toContain("CAPLO_META_VERIFY_TOKEN is malformed: 16 to 128 characters, each a letter (A-Z, a-z), a digit (0-9) or one of . _ ~ -");
    lines.length = 0;
    expect(await checkChannels(options("whatsapp-shop", twilioEnv), (line) => void lines.push(line))).toBe(0);
    expect(lines[0]).toBe("channels ready: whatsapp. Enter these webhook URLs:");
    expect(lines[1]).toMatch(/^  whatsapp: https:\/\/caplo.shop.example\/webhooks\/whatsapp\n    in Twilio Console/);
  });

  it("--check-channels refuses an agent name serve refuses, with serve's code", async () => {
    const started = await startServe({ ...options("Whatsapp_Shop", twilioEnv), runner }, () => undefined);
    expect(started).toMatchObject({ ok: false, error: { code: "agent_invalid", path: "Whatsapp_Shop" } });
    const lines: string[] = [];
    expect(await checkChannels(options("Whatsapp_Shop", twilioEnv), (line) => void lines.push(line))).toBe(1);
    expect(lines).toEqual([`caplo serve --check-channels: agent_invalid at Whatsapp_Shop: ${started.ok ? "" : started.error.message}`]);
  });
});
