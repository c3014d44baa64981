// Which transport `openEventBus` picks from CAPLO_REDIS_URL / CAPLO_DATABASE_URL, and its config errors,
// against the test run's PostgreSQL and Redis (tests/support/services.ts: the machine's, or npm's).
import { describe, expect, it } from "vitest";
import { REDIS_SKIP_REASON, TEST_DATABASE_URL, TEST_REDIS_URL } from "../../../tests/support/services.ts";
import { busSettingsFromEnv, openEventBus, type LatestSeqs } from "./index.ts";

const latestSeqs: LatestSeqs = async () => new Map();

describe("openEventBus", () => {
  it.skipIf(!TEST_REDIS_URL)(`uses Redis when CAPLO_REDIS_URL is set, even with a PostgreSQL database${TEST_REDIS_URL ? "" : ` (${REDIS_SKIP_REASON})`}`, async () => {
    const env = { CAPLO_REDIS_URL: TEST_REDIS_URL!, CAPLO_DATABASE_URL: TEST_DATABASE_URL };
    const opened = await openEventBus({ ...busSettingsFromEnv(env), latestSeqs, namespace: "caplo-open-test" });
    if (!opened.ok) throw new Error(opened.error.message);
    expect(opened.bus.transport).toBe("redis");
    await opened.bus.close();
  });

  it("uses PostgreSQL LISTEN/NOTIFY when only a PostgreSQL CAPLO_DATABASE_URL is set", async () => {
    const env = { CAPLO_DATABASE_URL: TEST_DATABASE_URL.replace(/^postgres:/, "postgresql:") };
    const opened = await openEventBus({ ...busSettingsFromEnv(env), latestSeqs, namespace: "caplo_open_test" });
    if (!opened.ok) throw new Error(opened.error.message);
    expect(opened.bus.transport).toBe("postgres");
    await opened.bus.close();
  });

  it("stays in-process for a single node on SQLite or with nothing configured", async () => {
    for (const env of [{}, { CAPLO_DATABASE_URL: "file:caplo.db" }, { CAPLO_REDIS_URL: "" }]) {
      const opened = await openEventBus(busSettingsFromEnv(env));
      if (!opened.ok) throw new Error(opened.error.message);
      expect(opened.bus.transport).toBe("memory");
      await opened.bus.close();
    }
  });

  it("refuses a Redis URL of another scheme, and a shared bus without the store to poll", async () => {
    expect(await openEventBus({ redisUrl: "http://127.0.0.1:6379", latestSeqs })).toEqual({
      ok: false,
      error: { code: "bus_config_invalid", path: "CAPLO_REDIS_URL", message: "must start with redis:// or rediss://" },
    });
    expect(await openEventBus({ redisUrl: "redis://127.0.0.1:6379" })).toMatchObject({ ok: false, error: { code: "bus_config_invalid", path: "CAPLO_REDIS_URL" } });
    expect(await openEventBus({ databaseUrl: "postgres://postgres@127.0.0.1/postgres" })).toMatchObject({ ok: false, error: { code: "bus_config_invalid", path: "CAPLO_DATABASE_URL" } });
  });
});
