import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentConfigSchema } from "@caplo/shared";
import { createRelease } from "./release.ts";
import { FileReleaseStore } from "./releaseStore.ts";
import { releaseStoreContract } from "./releaseStore.contract.ts";
import { ordersV1 } from "./__fixtures__/versions.ts";

async function openFileStore() {
  const dir = await mkdtemp(join(tmpdir(), "caplo-releases-"));
  return { dir, store: new FileReleaseStore(dir), reopen: async () => new FileReleaseStore(dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

releaseStoreContract("FileReleaseStore", openFileStore);

function shopRelease() {
  const config = agentConfigSchema.parse({
    apiVersion: "v1",
    kind: "Agent",
    name: "shop",
    instructions: "Help with orders.",
    tools: ["orders/cancel_order"],
    channels: { whatsapp: {} },
  });
  const result = createRelease(config, [ordersV1], new Date("2026-03-01T12:00:00Z"));
  if (!result.ok) throw new Error("expected a release");
  return result.release;
}

describe("FileReleaseStore", () => {
  it("writes one JSON file per release and a latest pointer, and no temporary files", async () => {
    const { dir, store, cleanup } = await openFileStore();
    try {
      const release = shopRelease();
      await store.put(release);
      expect((await readdir(join(dir, "shop"))).sort()).toEqual([`${release.contentHash}.json`, "latest.json"].sort());
      expect(JSON.parse(await readFile(join(dir, "shop", "latest.json"), "utf8"))).toEqual({ id: release.id });
    } finally {
      await cleanup();
    }
  });

  it("refuses to serve a release file altered on disk (a write turned into confirmation: none)", async () => {
    const { dir, store, cleanup } = await openFileStore();
    try {
      const release = shopRelease();
      await store.put(release);
      const file = join(dir, "shop", `${release.contentHash}.json`);
      const text = await readFile(file, "utf8");
      const needle = '"confirmation": "required"';
      // Once in the pinned package's manifest, once in the release's tool list: each alone is caught.
      const first = text.indexOf(needle);
      const last = text.lastIndexOf(needle);
      expect(first).toBeLessThan(last);
      for (const at of [first, last]) {
        await writeFile(file, `${text.slice(0, at)}"confirmation": "none"${text.slice(at + needle.length)}`);
        await expect(store.get(release.id)).rejects.toMatchObject({ code: "release_corrupt" });
        await expect(store.latest("shop")).rejects.toMatchObject({ code: "release_corrupt" });
      }
      await writeFile(file, text);
      expect(await store.get(release.id)).toEqual(release);
    } finally {
      await cleanup();
    }
  });

  it("reports a latest pointer that names a missing release", async () => {
    const { dir, store, cleanup } = await openFileStore();
    try {
      const release = shopRelease();
      await store.put(release);
      await rm(join(dir, "shop", `${release.contentHash}.json`));
      await expect(store.latest("shop")).rejects.toMatchObject({ code: "release_corrupt" });
    } finally {
      await cleanup();
    }
  });
});
