// The behaviour every ReleaseStore must have, as one test suite: call it from a *.test.ts with a
// factory for the implementation (FileReleaseStore here; a database store may run it too).
import { describe, expect, it } from "vitest";
import { agentConfigSchema, type Release } from "@caplo/shared";
import { createRelease } from "./release.ts";
import type { ReleaseStore } from "./releaseStore.ts";
import { ordersV1, ordersV2 } from "./__fixtures__/versions.ts";

function release(name: string, versions = [ordersV1], greeting?: string): Release {
  const config = agentConfigSchema.parse({
    apiVersion: "v1",
    kind: "Agent",
    name,
    instructions: "Help with orders.",
    tools: ["orders/get_order"],
    origins: ["https://shop.example"],
    channels: { web: {} },
    ...(greeting && { greeting }),
  });
  const result = createRelease(config, versions, new Date("2026-03-01T12:00:00Z"));
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.release;
}

export function releaseStoreContract(name: string, open: () => Promise<{ store: ReleaseStore; reopen: () => Promise<ReleaseStore>; cleanup: () => Promise<void> }>): void {
  describe(`ReleaseStore contract: ${name}`, () => {
    it("gets back exactly what was put, by id, and as the agent's latest", async () => {
      const { store, cleanup } = await open();
      try {
        const r1 = release("shop");
        expect(await store.put(r1)).toEqual({ created: true });
        expect(await store.get(r1.id)).toEqual(r1);
        expect(await store.latest("shop")).toEqual(r1);
      } finally {
        await cleanup();
      }
    });

    it("knows nothing of an agent never published or an id never put", async () => {
      const { store, cleanup } = await open();
      try {
        expect(await store.latest("shop")).toBeUndefined();
        expect(await store.get(release("shop").id)).toBeUndefined();
        expect(await store.get("not an id")).toBeUndefined();
        expect(await store.latest("../etc")).toBeUndefined();
      } finally {
        await cleanup();
      }
    });

    it("moves latest to each new release and keeps the earlier ones unchanged", async () => {
      const { store, cleanup } = await open();
      try {
        const r1 = release("shop");
        const r2 = release("shop", [ordersV2]);
        await store.put(r1);
        await store.put(r2);
        expect((await store.latest("shop"))?.id).toBe(r2.id);
        expect(await store.get(r1.id)).toEqual(r1);
        expect((await store.get(r1.id))?.packages[0]?.id).toBe(ordersV1.id);
      } finally {
        await cleanup();
      }
    });

    it("putting an existing release again creates nothing and makes it latest (a rollback)", async () => {
      const { store, cleanup } = await open();
      try {
        const r1 = release("shop");
        const r2 = release("shop", [ordersV2]);
        await store.put(r1);
        await store.put(r2);
        expect(await store.put(r1)).toEqual({ created: false });
        expect((await store.latest("shop"))?.id).toBe(r1.id);
      } finally {
        await cleanup();
      }
    });

    it("keeps agents apart", async () => {
      const { store, cleanup } = await open();
      try {
        const shop = release("shop");
        const help = release("help-desk");
        await store.put(shop);
        await store.put(help);
        expect((await store.latest("shop"))?.id).toBe(shop.id);
        expect((await store.latest("help-desk"))?.id).toBe(help.id);
      } finally {
        await cleanup();
      }
    });

    it("refuses a release whose content does not match its id, and stores nothing for it", async () => {
      const { store, cleanup } = await open();
      try {
        const forged = JSON.parse(JSON.stringify(release("shop"))) as Release;
        (forged.tools[0]!.policy as { timeoutSeconds: number }).timeoutSeconds = 30;
        await expect(store.put(forged)).rejects.toMatchObject({ code: "release_conflict" });
        expect(await store.latest("shop")).toBeUndefined();
      } finally {
        await cleanup();
      }
    });

    it("survives a reopen: what was put is still there", async () => {
      const { store, reopen, cleanup } = await open();
      try {
        const r1 = release("shop", [ordersV1], "Hi");
        await store.put(r1);
        const again = await reopen();
        expect(await again.latest("shop")).toEqual(r1);
      } finally {
        await cleanup();
      }
    });
  });
}
