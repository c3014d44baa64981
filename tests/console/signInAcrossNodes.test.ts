// The console's sign-in limit (10 per client address per minute, docs/console.md) holds across nodes: two real
// gateways on one PostgreSQL database, attempts from one address spread over both, the 11th refused by either
// with 429 and Retry-After, while another address still signs in. Requests come through the trusted loopback
// proxy with X-Forwarded-For, as behind a load balancer.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../server/src/store/postgresStore.ts";
import { SIGN_IN_ATTEMPTS_MAX } from "../../server/src/console/sessions.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { testPg } from "../support/services.ts";

const settings = { ...testPg(), schema: `caplo_signin_${process.pid}_${randomBytes(4).toString("hex")}` };
const nodes: Stack[] = [];

beforeAll(async () => {
  for (const nodeId of ["node-a", "node-b"]) nodes.push(await startStack({ nodeId, store: () => new PostgresStore(settings), gateway: { trustedProxies: ["127.0.0.1"] } }));
}, 60_000);

afterAll(async () => {
  for (const node of nodes) await node.close();
  const store = new PostgresStore(settings);
  await store.dropSchema();
  await store.close();
});

function signIn(node: Stack, token: string, address: string) {
  return fetch(`${node.base}/v1/team/session`, { method: "POST", headers: { "content-type": "application/json", origin: node.base, "x-forwarded-for": address }, body: JSON.stringify({ token }) });
}

describe("the sign-in limit on two nodes", () => {
  it("attempts from one address on both nodes count together: the 11th is refused by either node; another address is not held up", async () => {
    const [a, b] = nodes as [Stack, Stack];
    for (let i = 0; i < SIGN_IN_ATTEMPTS_MAX; i++) expect((await signIn(i % 2 ? a : b, `wrong-${i}`, "198.51.100.7")).status).toBe(401);
    for (const node of [a, b]) {
      const refused = await signIn(node, "team-secret-token", "198.51.100.7");
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("sign_in_rate_limited");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect((await signIn(b, "team-secret-token", "198.51.100.8")).status).toBe(200);
  });
});
