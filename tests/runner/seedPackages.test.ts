// The seeds' example packages (examples/seed), built and run unchanged through the real runner and
// sandbox. Their code calls https://api.shop.example: the operator maps that host to a local HTTPS fake
// (CAPLO_EGRESS_RESOLVE) and lets the sandbox trust the fake's test certificate authority
// (CAPLO_EXTRA_CA_CERTS). TLS runs end to end between the package and the fake, through the egress proxy.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PackageVersion } from "@caplo/shared";
import { buildPackage } from "../../server/src/build/index.ts";
import { REPO_ROOT } from "../../server/src/runner/node24.ts";
import { CaploToolRunner, RunnerError } from "../../server/src/runner/toolRunner.ts";

const SEED = join(REPO_ROOT, "examples", "seed");
const KEY = "sk_seed_7f3a91";
const certs = mkdtempSync(join(tmpdir(), "caplo-seed-tls-"));
type Seen = { method: string; url: string; authorization?: string; idempotencyKey?: string };
const seen: Seen[] = [];
let api: Server;
let port = 0;
let runner: CaploToolRunner;
const versions: Record<string, PackageVersion> = {};

/** A test CA and a certificate for api.shop.example signed by it (openssl, as an operator would). */
function makeCertificates(): void {
  const openssl = (...args: string[]) => {
    const result = spawnSync("openssl", args, { cwd: certs, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=caplo seed test CA");
  openssl("req", ...ec, "-keyout", "api.key", "-out", "api.csr", "-subj", "/CN=api.shop.example");
  writeFileSync(join(certs, "ext.cnf"), "subjectAltName=DNS:api.shop.example\n");
  openssl("x509", "-req", "-in", "api.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "api.pem", "-days", "2", "-extfile", "ext.cnf");
}

/** The Shop API the seeds describe, as seed.test.ts fakes it. */
function reply(request: IncomingMessage): [number, unknown] {
  const url = new URL(request.url ?? "/", "https://api.shop.example");
  const order = url.pathname.split("/")[2];
  if (request.method === "GET" && url.pathname.startsWith("/orders/")) {
    return order === "SO-1002" ? [200, { id: "SO-1002", status: "shipped", total: 42.5, currency: "EUR" }] : [404, { error: "not found" }];
  }
  if (request.method === "POST" && url.pathname.endsWith("/cancel")) {
    if (order === "SO-1001") return [200, { status: "cancelled" }];
    if (order === "SO-1003") return [202, { operationId: "op_123" }];
    if (order === "SO-1004") return [409, { reason: "The order has shipped." }];
    return [500, { error: "boom" }];
  }
  if (request.method === "GET" && url.pathname === "/operations") {
    const operation = url.searchParams.get("operation");
    if (operation === "op_applied") return [200, { status: "applied", orderId: "SO-1003" }];
    if (operation === "op_pending") return [200, { status: "pending", operationId: "op_pending" }];
    if (operation === "op_lost") return [200, { status: "mystery" }];
    return [200, { status: "not_applied" }];
  }
  return [404, {}];
}

beforeAll(async () => {
  makeCertificates();
  api = createServer({ key: readFileSync(join(certs, "api.key")), cert: readFileSync(join(certs, "api.pem")) }, (request, response) => {
    seen.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization, idempotencyKey: request.headers["idempotency-key"] as string | undefined });
    const [status, body] = reply(request);
    response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  port = (api.address() as AddressInfo).port;
  for (const name of ["order-lookup", "cancel-order", "orders"]) {
    const built = await buildPackage(join(SEED, name));
    if (!built.ok) throw new Error(`${name} did not build: ${JSON.stringify(built.errors)}`);
    versions[name] = built.version;
  }
  runner = new CaploToolRunner({ egressResolve: `api.shop.example=127.0.0.1:${port}`, extraCaCerts: join(certs, "ca.pem") });
  for (const version of Object.values(versions)) await runner.load(version);
}, 120_000);

afterAll(async () => {
  await runner?.close();
  await new Promise((resolve) => api?.close(resolve));
  rmSync(certs, { recursive: true, force: true });
});

let counter = 0;
const call = (name: string, tool: string, args: Record<string, unknown>, idempotencyKey?: string) =>
  runner.call({
    packageVersionId: versions[name]!.id,
    tool,
    args,
    context: { invocationId: `seed-${++counter}`, secrets: { SHOP_API_KEY: KEY }, ...(idempotencyKey && { idempotencyKey }) },
  });

describe("the seeds' example packages through the runner and sandbox", () => {
  it("order-lookup (function): get_order over https with the secret; a 404 is an error result the model sees", async () => {
    const found = await call("order-lookup", "get_order", { orderId: "SO-1002" });
    expect(found.isError, found.modelText).toBe(false);
    expect(found.structuredContent).toEqual({ orderId: "SO-1002", status: "shipped", total: 42.5, currency: "EUR" });
    expect(seen.at(-1)).toMatchObject({ method: "GET", url: "/orders/SO-1002", authorization: `Bearer ${KEY}` });
    expect(found.logs.map((line) => [line.level, line.message])).toEqual([["info", "order found"]]);
    const missing = await call("order-lookup", "get_order", { orderId: "SO-9999" });
    expect(missing).toMatchObject({ isError: true, modelText: "order lookup failed with 404" });
    const invalid = await call("order-lookup", "get_order", { orderId: "1002" });
    expect(invalid.isError).toBe(true);
    expect(invalid.modelText).toContain("/orderId");
  });

  it("cancel-order (function): 200, 202, 409 and 500 are applied, pending, not applied and unknown, each with its idempotency key", async () => {
    const outcome = async (orderId: string) => (await call("cancel-order", "cancel_order", { orderId }, `key-${orderId}`)).outcome;
    expect(await outcome("SO-1001")).toMatchObject({ outcome: "applied", structuredContent: { orderId: "SO-1001", status: "cancelled" } });
    expect(seen.at(-1)).toMatchObject({ method: "POST", url: "/orders/SO-1001/cancel", idempotencyKey: "key-SO-1001", authorization: `Bearer ${KEY}` });
    expect(await outcome("SO-1003")).toEqual({ outcome: "pending", operationRef: "op_123", message: "The cancellation is being processed." });
    expect(await outcome("SO-1004")).toEqual({ outcome: "not_applied", message: "The order has shipped." });
    expect(await outcome("SO-1005")).toMatchObject({ outcome: "unknown", reason: expect.stringContaining("cancel failed with 500") });
  });

  it("cancel-order's status check gets the original idempotency key and maps every answer", async () => {
    const check = (operationRef: string) =>
      runner.checkStatus({ packageVersionId: versions["cancel-order"]!.id, tool: "cancel_order", operationRef, context: { invocationId: `st-${operationRef}`, secrets: { SHOP_API_KEY: KEY }, idempotencyKey: "key-original" } });
    expect(await check("op_applied")).toMatchObject({ outcome: "applied", structuredContent: { orderId: "SO-1003", status: "cancelled" } });
    expect(seen.at(-1)!.url).toBe("/operations?key=key-original&operation=op_applied");
    expect(await check("op_pending")).toMatchObject({ outcome: "pending", operationRef: "op_pending" });
    expect(await check("op_other")).toEqual({ outcome: "not_applied", message: "The order was not cancelled." });
    expect(await check("op_lost")).toMatchObject({ outcome: "unknown", reason: expect.stringContaining("unexpected status mystery") });
  });

  it("orders (MCP): get_order with context(extra), and cancel_order's pending outcome from _meta", async () => {
    const order = await call("orders", "get_order", { orderId: "SO-1002" });
    expect(order.structuredContent).toEqual({ orderId: "SO-1002", status: "shipped" });
    const cancel = await call("orders", "cancel_order", { orderId: "SO-1003" }, "key-mcp");
    expect(cancel.outcome).toMatchObject({ outcome: "pending", operationRef: "op_123" });
    expect(seen.at(-1)).toMatchObject({ idempotencyKey: "key-mcp", authorization: `Bearer ${KEY}` });
  });

  it("keeps the secret out of everything returned and logged", async () => {
    const result = await call("order-lookup", "get_order", { orderId: "SO-1002" });
    expect(JSON.stringify(result)).not.toContain(KEY);
    expect(JSON.stringify(runner.logStore.read(result.invocationId))).not.toContain(KEY);
  });
});

describe("TLS is the package's own, end to end", () => {
  it("without the operator's CA the package's TLS refuses the fake's certificate", async () => {
    const plain = new CaploToolRunner({ egressResolve: `api.shop.example=127.0.0.1:${port}` });
    try {
      await plain.load(versions["order-lookup"]!);
      const result = await plain.call({ packageVersionId: versions["order-lookup"]!.id, tool: "get_order", args: { orderId: "SO-1002" }, context: { invocationId: "seed-no-ca", secrets: { SHOP_API_KEY: KEY } } });
      expect(result.isError).toBe(true);
      expect(result.modelText).toContain("fetch failed");
    } finally {
      await plain.close();
    }
  }, 60_000);

  it("refuses an extra CA file that is missing or holds no certificate, by code", () => {
    const attempt = (path: string) => {
      try {
        new CaploToolRunner({ extraCaCerts: path });
        return "accepted";
      } catch (error) {
        return (error as RunnerError).code;
      }
    };
    expect(attempt(join(certs, "missing.pem"))).toBe("extra_ca_certs_invalid");
    expect(attempt(join(certs, "ext.cnf"))).toBe("extra_ca_certs_invalid");
    expect(attempt(certs)).toBe("extra_ca_certs_invalid");
  });
});
