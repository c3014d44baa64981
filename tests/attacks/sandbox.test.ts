// A tool package that mishandles its secret and follows redirects, in the real sandbox (tests/attacks/README.md):
// the secret, spelled the ways code spells it by accident (in a query string, a form, JSON text, a Basic
// authorization header, base64), must not reach the model's text, the structured result, a log line, the
// invocation log or a write's outcome; and a redirect from a listed host is held to the egress rule like the
// first request (another host, an IP literal, loopback by a listed name). The other escapes (files, spawn,
// DNS tricks, IPv6-mapped addresses, memory, log floods, 256 KiB) are tests/runner's; see the README.
import { createServer as createHttpServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { MemoryLogStore } from "../../server/src/runner/logStore.ts";
import { TEST_HOST, testVersion } from "../runner/testPackages.ts";
import { SECRET, spellingsIn } from "./support/secretSpellings.ts";

const leaky = testVersion(
  "leaky",
  [
    { name: "leak", policy: { effect: "read", timeoutSeconds: 5 } },
    { name: "leak_throw", policy: { effect: "read", timeoutSeconds: 5 } },
    { name: "leak_write", policy: { effect: "write", timeoutSeconds: 5, confirmation: "required" }, hasStatus: true },
    { name: "leak_long", policy: { effect: "read", timeoutSeconds: 5 } },
    { name: "leak_question", policy: { effect: "read", timeoutSeconds: 5, elicitation: { style: "form", fields: [{ name: "size" }] } } },
    { name: "follow", policy: { effect: "read", timeoutSeconds: 10 } },
  ],
  { egress: ["allowed.test", "localhost"], secrets: ["SHOP_API_KEY"], effectOutcomes: true, dir: join(import.meta.dirname, "packages", "leaky") },
);

let runner: CaploToolRunner;
let http: Server;
let port = 0;
const logStore = new MemoryLogStore();
let calls = 0;
const context = (extra: Record<string, unknown> = {}) => ({ invocationId: `inv-leak-${++calls}`, conversationId: "c_leak", secrets: { SHOP_API_KEY: SECRET }, ...extra });

beforeAll(async () => {
  // allowed.test: the listed host. It redirects wherever ?to= says, and answers /secret with what a private
  // service would hold.
  http = createHttpServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://allowed.test");
    if (url.pathname === "/redirect") return void res.writeHead(302, { location: url.searchParams.get("to") ?? "/" }).end();
    res.end(url.pathname === "/secret" ? "private data of the operator" : `listed ${url.pathname}`);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  port = (http.address() as { port: number }).port;
  runner = new CaploToolRunner({ hostModule: TEST_HOST, egressResolve: `allowed.test=127.0.0.1:${port}`, logStore });
  await runner.load(leaky);
}, 60_000);
afterAll(async () => {
  await runner?.close();
  http?.closeAllConnections();
  await new Promise((resolve) => http?.close(resolve));
});

/** Every spelling of the secret found in a value's JSON text. */
const leaks = (value: unknown) => spellingsIn(JSON.stringify(value) ?? "");

describe("a package that spells its secret the ways code does by accident", () => {
  it("the spellings this test looks for are really in what the package produces (the test can see a leak)", () => {
    const produced = [
      `key ${SECRET}`,
      `GET https://api.shop.example/orders?key=${encodeURIComponent(SECRET)}&page=1`,
      `body ${new URLSearchParams({ key: SECRET, page: "1" })}`,
      `sent ${JSON.stringify({ apiKey: SECRET, page: 1 })}`,
      `authorization: Basic ${Buffer.from(`shop-user:${SECRET}`).toString("base64")}`,
      `token ${Buffer.from(SECRET).toString("base64")}`,
      `state=${Buffer.from(`v1.${SECRET}`).toString("base64url")}`,
    ];
    // Each line the package writes holds one of the spellings looked for.
    for (const line of produced) expect(leaks(line), line).not.toEqual([]);
  });

  it("a read that logs and returns every spelling: none reaches the model's text, the structured result, the log lines or the invocation log", async () => {
    const result = await runner.call({ packageVersionId: leaky.id, tool: "leak", args: {}, context: context() });
    expect(result.isError).toBe(false);
    expect(result.logs.length).toBeGreaterThanOrEqual(7);
    expect(leaks(result.modelText)).toEqual([]);
    expect(leaks(result.structuredContent)).toEqual([]);
    expect(leaks(result.logs)).toEqual([]);
    expect(leaks(logStore.read(result.invocationId))).toEqual([]);
    expect(result.modelText).toContain("[secret:SHOP_API_KEY]");
  });

  it("a read that throws with the secret in its message: the error the model sees holds no spelling of it", async () => {
    const result = await runner.call({ packageVersionId: leaky.id, tool: "leak_throw", args: {}, context: context() });
    expect(result.isError).toBe(true);
    expect(result.modelText).toContain("request failed");
    expect(leaks(result)).toEqual([]);
  });

  it("a write refused with the secret in its message, and a status check that throws with it: the outcome and its reason hold no spelling of it", async () => {
    const result = await runner.call({ packageVersionId: leaky.id, tool: "leak_write", args: {}, context: context({ idempotencyKey: "ik_leak_1" }) });
    expect(result.outcome?.outcome).toBe("not_applied");
    expect(leaks(result)).toEqual([]);
    const status = await runner.checkStatus({ packageVersionId: leaky.id, tool: "leak_write", context: context({ idempotencyKey: "ik_leak_1" }) });
    expect(status.outcome).toBe("unknown");
    expect(leaks(status)).toEqual([]);
    expect(leaks(logStore.read())).toEqual([]);
  });
});

describe("a package whose long log lines hold its secret where the log cuts them", () => {
  it("no part of the secret is kept before a message's cut or in the start kept of large data", async () => {
    const result = await runner.call({ packageVersionId: leaky.id, tool: "leak_long", args: {}, context: context() });
    expect(result.isError, result.modelText).toBe(false);
    expect(result.logs).toHaveLength(4);
    // The cuts are where the package put the secret: 10 characters of it would be kept.
    expect(result.logs[0]!.message).toMatch(/^a{8182}… \[[0-9]+ more characters cut\]$/);
    expect((result.logs[1]!.data as { cut: string }).cut).toContain("only its start is kept");
    const kept = JSON.stringify([result.logs, logStore.read(result.invocationId)]);
    for (const prefix of [SECRET.slice(0, 10), encodeURIComponent(SECRET).slice(0, 10)]) expect(kept).not.toContain(prefix);
  });
});

describe("a package that asks the visitor a question carrying its secret", () => {
  it("the question the visitor is shown holds no spelling of it: not its message, a field's title or description, nor a choice", async () => {
    const asked: unknown[] = [];
    const result = await runner.call({
      packageVersionId: leaky.id,
      tool: "leak_question",
      args: {},
      context: context(),
      elicit: async (request) => {
        asked.push(request);
        return { action: "accept", content: { size: "S" } };
      },
    });
    expect(result.isError, result.modelText).toBe(false);
    expect(result.modelText).toBe("answered accept");
    expect(asked.length).toBe(1);
    expect(leaks(asked)).toEqual([]);
    expect(JSON.stringify(asked)).toContain("[secret:SHOP_API_KEY]");
  });
});

describe("a redirect from a listed host is held to the egress rule", () => {
  const follow = async (to: string) => {
    const result = await runner.call({ packageVersionId: leaky.id, tool: "follow", args: { url: `http://allowed.test/redirect?to=${encodeURIComponent(to)}` }, context: context() });
    return JSON.parse(result.modelText) as { ok: boolean; status?: number; body?: string; cause?: string };
  };

  it("the control case: a redirect to another path of the listed host is followed", async () => {
    expect(await follow("/hello")).toEqual({ ok: true, status: 200, body: "listed /hello" });
  });

  it.each([
    ["a host not in egress", "http://unlisted.example/", "not in the package's egress list"],
    ["loopback by IP", `http://127.0.0.1:${0}/secret`, "IP literal"],
    ["loopback as an IPv4-mapped IPv6 address", "http://[::ffff:127.0.0.1]/secret", "IP literal"],
    ["the cloud metadata address", "http://169.254.169.254/latest/meta-data/", "IP literal"],
    ["a listed name that resolves to loopback", "http://localhost/secret", "private, loopback or link-local"],
    ["the listed host on another port", "http://allowed.test:8080/secret", "port"],
  ])("to %s: refused, and the private answer never reaches the package", async (_what, to, cause) => {
    const answer = await follow(to.replace(":0/", `:${port}/`));
    expect(answer.ok).toBe(false);
    expect(answer.cause).toContain(cause);
    expect(JSON.stringify(answer)).not.toContain("private data");
  });
});
