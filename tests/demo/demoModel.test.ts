// `npm start` with a model configured (OPENAI_API_KEY, an OpenAI-compatible OPENAI_BASE_URL and CAPLO_MODEL)
// talks to that model instead of the offline demo model: here a fake OpenAI-compatible server on loopback
// that checks every request's wire format. The demo is started as `caplo demo` starts it (its flags and
// environment parsed by parseDemoArgs), a chat message goes in over the widget protocol, the model asks
// for the demo's get_order, the sandboxed orders package reads the real demo shop API, and the model's
// answer comes back to the chat.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { chunk, startFakeOpenAI, writeSse, type FakeOpenAI } from "../../server/src/model/openai.fake.ts";
import { startDemo, type RunningDemo } from "../../server/src/demo/demo.ts";
import { parseDemoArgs } from "../../server/src/demo/demoOptions.ts";
import { TestClient } from "../gateway/support/client.ts";
import { freePort } from "./demoProcess.ts";

const MODEL = "shop-model-test";
const API_KEY = "sk-demo-test";
let fake: FakeOpenAI | undefined;
let demo: RunningDemo | undefined;
let client: TestClient | undefined;
const dataDir = mkdtempSync(join(tmpdir(), "caplo-demo-model-"));

afterAll(async () => {
  await client?.close();
  await demo?.close();
  await fake?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe("npm start with a model configured", () => {
  test("the demo uses the OpenAI-compatible model: it calls the demo's tools and its answer reaches the chat", async () => {
    fake = await startFakeOpenAI({ model: MODEL, apiKey: API_KEY }, async (request, response) => {
      const messages = request.body.messages as { role: string; content: string | null }[];
      // After the tool's result, answer in words; before it, look the order up.
      if (messages.at(-1)?.role === "tool") return writeSse(response, [chunk.role(), chunk.text("Your order SO-1002 is being processed."), chunk.finish("stop")]);
      return writeSse(response, [chunk.role(), chunk.tool(0, { id: "call_1", name: "orders__get_order", arguments: JSON.stringify({ orderId: "SO-1002" }) }), chunk.finish("tool_calls")]);
    });
    const env = { ...process.env, OPENAI_API_KEY: API_KEY, OPENAI_BASE_URL: fake.baseUrl, CAPLO_MODEL: MODEL };
    const parsed = parseDemoArgs(["--port", String(await freePort()), "--shop-port", "0", "--gateway-port", "0", "--data-dir", dataDir], env);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const lines: string[] = [];
    const started = await startDemo(parsed.options, (line) => lines.push(line));
    if (!started.ok) throw new Error(`${started.error.code}: ${started.error.message}\n${lines.join("\n")}`);
    demo = started.demo;
    expect(lines).toContain("Model: the configured OpenAI-compatible model.");
    expect(lines.join("\n")).not.toContain("offline demo model");

    // The widget's app runs on the gateway's origin, so that is the WebSocket's Origin.
    client = await TestClient.open(`${demo.gatewayUrl.replace(/^http/, "ws")}/v1/ws`, demo.gatewayUrl);
    await client.hello("demo-shop");
    client.send({ t: "in", ref: "r1", event: { type: "message", text: "Where is my order SO-1002?" } });
    const answer = "Your order SO-1002 is being processed.";
    await client.waitFor((frame) => frame.t === "event" && frame.message.type === "text" && frame.message.from === "agent" && frame.message.text === answer, 30_000);

    // The agent's greeting, then the model's answer: nothing from the offline demo model.
    const said = client.events().flatMap((frame) => (frame.message.type === "text" && frame.message.from === "agent" ? [frame.message.text] : []));
    expect(said.at(-1)).toBe(answer);
    expect(said.join("\n")).not.toMatch(/offline demo/);
    // The order's detail card, from the real shop API through the sandboxed orders package.
    const result = client.events().find((frame) => frame.message.type === "result");
    expect(result?.message).toMatchObject({ type: "result", title: "Your order" });

    expect(fake.problems).toEqual([]);
    expect(fake.requests).toHaveLength(2);
    const tools = (fake.requests[0]!.body.tools as { function: { name: string } }[]).map((tool) => tool.function.name);
    expect(tools).toEqual(expect.arrayContaining(["orders__get_order", "orders__cancel_order", "stores__find_stores", "invoices__get_invoice"]));
    const toolMessage = (fake.requests[1]!.body.messages as { role: string; content: string }[]).find((message) => message.role === "tool");
    expect(toolMessage?.content).toContain("SO-1002");
    expect(toolMessage?.content).toContain("processing");
  }, 180_000);
});
