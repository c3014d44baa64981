// The node side of a cluster as `caplo serve` runs it: node ids unique per process, settings checked, and
// a node that stops renewing its lease recovered by another, on the machine's PostgreSQL.
import { afterAll, describe, expect, it } from "vitest";
import { parseServeArgs } from "../cli/serve.ts";
import { startClusterNode, uniqueNodeId } from "./clusterNode.ts";
import { TEST_DATABASE_URL, TestSchema } from "./testSchema.ts";

const schema = new TestSchema();
afterAll(() => schema.drop());

describe("cluster node", () => {
  it("gives every process its own node id on PostgreSQL, and keeps the host name on SQLite", () => {
    expect(uniqueNodeId()).not.toBe(uniqueNodeId());
    const pg1 = parseServeArgs(["--agent", "a", "--db", "postgres://x/y"], {});
    const pg2 = parseServeArgs(["--agent", "a", "--db", "postgres://x/y"], {});
    if (!pg1.ok || !pg2.ok) throw new Error("parse failed");
    expect(pg1.options.nodeId).toMatch(new RegExp(`-${process.pid}-[0-9a-f]{6}$`));
    expect(pg1.options.nodeId).not.toBe(pg2.options.nodeId);
    const sqlite = parseServeArgs(["--agent", "a", "--db", "x.db"], {});
    const named = parseServeArgs(["--agent", "a", "--db", "postgres://x/y"], { CAPLO_NODE_ID: "edge-1" });
    expect(sqlite.ok && sqlite.options.nodeId).not.toContain(String(process.pid));
    expect(named.ok && named.options.nodeId).toBe("edge-1");
  });

  it("refuses a lease, poll interval or webhook rate outside its range with the variable's name", () => {
    expect(parseServeArgs(["--agent", "a"], { CAPLO_NODE_LEASE_MS: "999" })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_NODE_LEASE_MS" } });
    expect(parseServeArgs(["--agent", "a"], { CAPLO_BUS_POLL_MS: "1.5" })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_BUS_POLL_MS" } });
    expect(parseServeArgs(["--agent", "a"], { CAPLO_WEBHOOKS_PER_SECOND: "0" })).toMatchObject({ ok: false, error: { code: "setting_invalid", path: "CAPLO_WEBHOOKS_PER_SECOND" } });
    expect(parseServeArgs(["--agent", "a"], { CAPLO_NODE_LEASE_MS: "1000", CAPLO_BUS_POLL_MS: "50", CAPLO_WEBHOOKS_PER_SECOND: "5" })).toMatchObject({
      ok: true,
      options: { nodeLeaseMs: 1000, busPollMs: 50, webhooksPerSecond: 5 },
    });
  });

  it("has a surviving node recover a node that stopped renewing, once, and a node that left cleanly never", async () => {
    const recovered: string[] = [];
    const logs: string[] = [];
    const common = { databaseUrl: TEST_DATABASE_URL, schema: schema.name, leaseMs: 1_000, log: (_level: string, message: string) => void logs.push(message) };
    const lost = await startClusterNode({ ...common, nodeId: "node-lost", recover: async () => [] });
    const leaving = await startClusterNode({ ...common, nodeId: "node-leaving", recover: async () => [] });
    const survivor = await startClusterNode({ ...common, nodeId: "node-survivor", recover: async (id) => void recovered.push(id) });
    await lost.stop(); // as after kill -9: its lease stays and runs out
    await leaving.stop({ leave: true });
    const deadline = Date.now() + 10_000;
    while (recovered.length === 0 && Date.now() < deadline) {
      await survivor.round();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await survivor.round();
    expect(recovered).toEqual(["node-lost"]);
    expect(logs).toContain("cluster: took over a lost node");
    await survivor.stop({ leave: true });
  });
});
