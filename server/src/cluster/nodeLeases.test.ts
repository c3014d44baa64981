// Node liveness leases on the machine's PostgreSQL: a node that stops renewing is taken over by exactly
// one survivor, and finds out if it comes back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NodeLeases } from "./nodeLeases.ts";
import { TestSchema } from "./testSchema.ts";
import { LEASE_MS_MIN } from "./workQueue.ts";

const schema = new TestSchema();
beforeAll(async () => {
  expect(await NodeLeases.migrate(schema.pool(1), schema.name)).toEqual({ ok: true, applied: [1] });
});
afterAll(() => schema.drop());

const node = (nodeId: string) => new NodeLeases({ pool: schema.pool(2), schema: schema.name, nodeId, leaseMs: LEASE_MS_MIN });

describe("NodeLeases", () => {
  it("has exactly one of three survivors recover a node whose lease ran out, and tells the node when it returns", async () => {
    const lost = node("node-lost");
    const survivors = [node("node-a"), node("node-b"), node("node-c")];
    expect(await lost.heartbeat()).toEqual({ wasTakenOver: false });
    for (const survivor of survivors) await survivor.heartbeat();
    const recovered: string[] = [];
    const recover = async (id: string) => void recovered.push(id);

    // Alive: nobody takes it over.
    expect(await survivors[0]!.takeOverLost(recover)).toEqual([]);

    // The lost node stops renewing; the survivors keep renewing and keep looking, all at once.
    const start = Date.now();
    const takenBy: string[][] = [[], [], []];
    while (recovered.length === 0 && Date.now() - start < 10_000) {
      await Promise.all(survivors.map((survivor) => survivor.heartbeat()));
      const rounds = await Promise.all(survivors.map((survivor) => survivor.takeOverLost(recover)));
      rounds.forEach((ids, i) => takenBy[i]!.push(...ids));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(recovered).toEqual(["node-lost"]);
    expect(takenBy.flat()).toEqual(["node-lost"]);
    // Once more, later: nothing left to recover.
    expect((await Promise.all(survivors.map((survivor) => survivor.takeOverLost(recover)))).flat()).toEqual([]);

    // The stalled node's next heartbeat says its work was taken over.
    expect(await lost.heartbeat()).toEqual({ wasTakenOver: true });
    expect(await lost.heartbeat()).toEqual({ wasTakenOver: false });
    for (const survivor of survivors) await survivor.leave();
    await lost.leave();
  });

  it("keeps a lost node listed when its recovery fails, so the next attempt runs it again", async () => {
    const lost = node("node-flaky");
    const survivor = node("node-d");
    await lost.heartbeat();
    const failing = async () => {
      throw new Error("store unreachable");
    };
    const start = Date.now();
    let failure = "";
    while (Date.now() - start < 10_000) {
      const result = await survivor.takeOverLost(failing).then(
        () => "nothing to take over yet",
        (error: Error) => error.message,
      );
      if (result === "store unreachable") {
        failure = result;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(failure).toBe("store unreachable"); // the recovery ran and failed: the takeover was rolled back
    const recovered: string[] = [];
    expect(await survivor.takeOverLost(async (id) => void recovered.push(id))).toEqual(["node-flaky"]);
    expect(recovered).toEqual(["node-flaky"]);
  });
});
