// The demo page server: the page carries the widget's script tag for the running gateway, only the demo
// page itself gets a signed identity token (standard, or high after a step-up), nothing outside
// examples/demo-site is served.
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadAgentFile } from "../agents/agentFile.ts";
import { createIdentityVerifier } from "../identity/index.ts";
import { DEMO_AGENT_FILE } from "./demo.ts";
import { listenDemoPage, type DemoPage } from "./demoPage.ts";

const SECRET = "a-demo-secret-that-is-long-enough-for-hs256-0123456789";
let page: DemoPage;

beforeAll(async () => {
  page = await listenDemoPage(0);
});
afterAll(() => page.close());

function send(path: string, method = "GET", headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${page.url}${path}`, { method, headers }, (response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => (body += chunk.toString()));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
    });
    outgoing.on("error", reject);
    outgoing.end();
  });
}

describe("demo page server", () => {
  test("says it is starting until the gateway runs, then serves the shop page with the widget's script tag", async () => {
    expect((await send("/")).status).toBe(503);
    const loaded = await loadAgentFile(DEMO_AGENT_FILE);
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.issues));
    const identity = loaded.agent.identity!;
    page.configure({ gatewayUrl: "http://127.0.0.1:9", agent: loaded.agent.name, identitySecret: SECRET, issuer: String(identity.issuer), audience: String(identity.audience), offline: true });
    const home = await send("/");
    expect(home.status).toBe(200);
    expect(home.body).toContain(`<script src="http://127.0.0.1:9/widget.js" data-agent="demo-shop" async></script>`);
    expect(home.body).toContain("Sign in as demo customer");
    expect((await send("/shop.css")).status).toBe(200);
  });

  test("nothing outside the demo site folder is served", async () => {
    for (const path of ["/../agent.yaml", "/%2e%2e/agent.yaml", "/..%2f..%2fpackage.json", "/index.ts"]) expect((await send(path)).status).toBe(404);
  });

  test("only the demo page's own origin gets an identity token, and the token verifies for the demo agent at the asked level", async () => {
    const own = page.url;
    expect((await send("/demo/sign-in", "POST")).status).toBe(403);
    expect((await send("/demo/sign-in", "POST", { origin: "http://evil.example" })).status).toBe(403);
    expect((await send("/demo/sign-in", "GET", { origin: own })).status).toBe(405);
    const loaded = await loadAgentFile(DEMO_AGENT_FILE);
    if (!loaded.ok) throw new Error("agent.yaml");
    const verifier = createIdentityVerifier(loaded.agent.identity!, (name) => (name === "DEMO_IDENTITY_SECRET" ? SECRET : undefined));
    if (!verifier.ok) throw new Error(verifier.error.message);
    for (const [query, level] of [["", "standard"], ["?level=high", "high"]] as const) {
      const answer = await send(`/demo/sign-in${query}`, "POST", { origin: own });
      expect(answer.status).toBe(200);
      const { token } = JSON.parse(answer.body) as { token: string };
      const verified = verifier.verify(token);
      expect(verified.ok && verified.subject.id).toBe("CUS-1001");
      expect(verified.ok && verified.subject.level).toBe(level);
    }
  });
});
