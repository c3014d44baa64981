// The team console's part of the store on SQLite and PostgreSQL, with two store instances on one database as
// two nodes have: sign-in attempts counted once each even when both nodes count at the same moment, a window
// that ends, and pruning.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../store/index.ts";
import { eachStore } from "../store/testing/storeHarness.ts";

describe.each(eachStore())("console store ($name)", (harness) => {
  let node: Store;
  let otherNode: Store;
  beforeAll(async () => {
    node = await harness.open();
    otherNode = await harness.open();
  });
  afterAll(async () => {
    await node?.close();
    await otherNode?.close();
    await harness.cleanup();
  });

  it("sign-in attempts from one address are counted once each across nodes, even at the same moment", async () => {
    const at = 5_000_000;
    const counts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? node : otherNode).countSignInAttempt("addr-1", at + i, 60_000)));
    expect(counts.map((c) => c.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(counts.map((c) => c.since)).size).toBe(1);
    expect(await node.countSignInAttempt("addr-2", at, 60_000)).toEqual({ count: 1, since: at });
  });

  it("a window ends windowMs after it began: the next attempt starts a new one; pruning forgets ended windows only", async () => {
    const at = 9_000_000;
    await node.countSignInAttempt("addr-3", at, 60_000);
    expect(await otherNode.countSignInAttempt("addr-3", at + 59_999, 60_000)).toEqual({ count: 2, since: at });
    expect(await otherNode.countSignInAttempt("addr-3", at + 60_000, 60_000)).toEqual({ count: 1, since: at + 60_000 });
    await node.countSignInAttempt("addr-4", at + 1, 60_000);
    expect(await node.pruneSignInAttempts(at + 1)).toBe(2); // addr-1 and addr-2 of the test before
    expect(await node.countSignInAttempt("addr-4", at + 2, 60_000)).toEqual({ count: 2, since: at + 1 });
    expect(await node.pruneSignInAttempts(at + 60_001)).toBe(2); // addr-3 and addr-4
    expect(await node.countSignInAttempt("addr-3", at + 60_002, 60_000)).toEqual({ count: 1, since: at + 60_002 });
  });
});
