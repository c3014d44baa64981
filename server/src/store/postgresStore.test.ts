// What only the PostgreSQL store does: several nodes migrating one schema at once, under its advisory lock.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { testPg } from "../../../tests/support/services.ts";
import { PostgresStore } from "./postgresStore.ts";

describe("postgres migrations", () => {
  it("five nodes migrating a schema that does not exist yet all succeed, and each migration applies once", async () => {
    const schema = `caplo_test_${process.pid}_${randomBytes(4).toString("hex")}`;
    const settings = { ...testPg(), schema };
    const nodes = Array.from({ length: 5 }, () => new PostgresStore(settings));
    try {
      const results = await Promise.allSettled(nodes.map((node) => node.migrate()));
      expect(results.filter((result) => result.status === "rejected")).toEqual([]);
      expect(await nodes[0]!.ping()).toBe(true);
    } finally {
      await nodes[0]!.dropSchema();
      await Promise.all(nodes.map((node) => node.close()));
    }
  });
});
