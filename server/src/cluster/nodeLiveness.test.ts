// The liveness loop on the machine's PostgreSQL: a node that stops (without leaving) is recovered by a
// node still running its loop; a node that leaves cleanly is not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NodeLeases } from "./nodeLeases.ts";
import { startNodeLiveness } from "./nodeLiveness.ts";
import { TestSchema } from "./testSchema.ts";
import { LEASE_MS_MIN } from "./workQueue.ts";

const schema = new TestSchema();
beforeAll(async () => {
  expect(await NodeLeases.migrate(schema.pool(1), schema.name)).toEqual({ ok: true, applied: [1] });
});
afterAll(() => schema.drop());

const leasesFor = (nodeId: string) => new NodeLeases({ pool: schema.pool(2), schema: schema.name, nodeId, leaseMs: LEASE_MS_MIN });

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("startNodeLiveness", () => {
  it("recovers a node that stopped without leaving, and not one that left cleanly", async () => {
    const recovered: string[] = [];
    const errors: unknown[] = [];
    const survivor = startNodeLiveness({
      leases: leasesFor("node-survivor"),
      recover: async (id) => void recovered.push(id),
      intervalMs: 100,
      onError: (error) => void errors.push(error),
    });
    const crashed = startNodeLiveness({ leases: leasesFor("node-crashed"), recover: async () => undefined, intervalMs: 100 });
    const leaving = startNodeLiveness({ leases: leasesFor("node-leaving"), recover: async () => undefined, intervalMs: 100 });
    await Promise.all([crashed.round(), leaving.round()]);

    await crashed.stop(); // as after kill -9: the lease stays and runs out
    await leaving.stop({ leave: true }); // a clean shutdown removes the lease
    await waitFor("the crashed node recovered", () => recovered.length > 0);
    await survivor.round();
    expect(recovered).toEqual(["node-crashed"]);
    expect(errors).toEqual([]);
    await survivor.stop({ leave: true });
  });

  it("tells a node that stalled past its lease that its work was taken over", async () => {
    const takenOver: string[] = [];
    const stalled = leasesFor("node-stalled");
    const loop = startNodeLiveness({ leases: stalled, recover: async () => undefined, intervalMs: 60_000, onTakenOver: () => void takenOver.push("node-stalled") });
    await loop.round();
    const other = leasesFor("node-other");
    await other.heartbeat();
    const start = Date.now();
    let taken: string[] = [];
    while (taken.length === 0 && Date.now() - start < 10_000) {
      taken = await other.takeOverLost(async () => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(taken).toEqual(["node-stalled"]);
    await loop.round(); // the stalled node wakes up
    expect(takenOver).toEqual(["node-stalled"]);
    await loop.stop({ leave: true });
    await other.leave();
  });
});
