// File retention: a delivered file's bytes are purged once the retention period has passed (and not a
// millisecond before), the conversation's file event and the model's note stay, and downloading the file
// afterwards over real HTTP answers 410 file_expired instead of the bytes. The engine's lifecycle runs the
// purge by itself; the period comes from CAPLO_FILE_RETENTION_DAYS (default 30 days).
import { afterEach, describe, expect, it } from "vitest";
import { Engine } from "../../server/src/engine/engine.ts";
import { FILE_RETENTION_DEFAULT_DAYS, readFileRetention } from "../../server/src/engine/fileRetention.ts";
import { StaticReleases } from "../../server/src/engine/release.ts";
import { ScriptedModel } from "../../server/src/model/scripted.ts";
import { engineHarness, type Harness } from "./support/harness.ts";

const DAY = 24 * 60 * 60 * 1000;
const rules = [{ when: "invoice", replies: [{ toolCalls: [{ name: "shop__invoice", args: { orderId: "SO-1002" } }] }, { text: "Here is your invoice." }] }];

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function withInvoice() {
  h = await engineHarness({ rules });
  await h.say("my invoice please");
  const [file] = await h.ofType("file");
  if (!file) throw new Error("no file delivered");
  // The file is fetched from the harness's server, at its delivered address.
  return { h, file, url: `${h.base}${file.url}`, id: file.url.split("/").at(-1)! };
}

describe("file retention", () => {
  it("the bytes are kept until the period has passed and purged at it; the file event and the model's note stay", async () => {
    const { h, file, id } = await withInvoice();
    const eventsBefore = await h.events();
    const transcriptBefore = await h.store.listTranscript(h.conversation.id);
    h.clock.now += FILE_RETENTION_DEFAULT_DAYS * DAY - 1;
    expect(await h.engine.purgeExpiredFiles()).toBe(0);
    expect((await h.store.getFile(id))?.bytes.length).toBe(file.size);
    h.clock.now += 1;
    expect(await h.engine.purgeExpiredFiles()).toBe(1);
    const purged = await h.store.getFile(id);
    expect(purged).toMatchObject({ name: "SO-1002.pdf", mimeType: "application/pdf", size: file.size, purgedAt: h.clock.now });
    expect(purged!.bytes.length).toBe(0);
    // Nothing of the history changed: the event still says the file was delivered.
    expect(await h.events()).toEqual(eventsBefore);
    expect(await h.store.listTranscript(h.conversation.id)).toEqual(transcriptBefore);
    expect((await h.ofType("file"))[0]).toEqual(file);
    // Purging again finds nothing.
    expect(await h.engine.purgeExpiredFiles()).toBe(0);
  });

  it("downloading over HTTP: the bytes before the period, 410 file_expired after it, 404 for an id that never existed", async () => {
    const { h, url } = await withInvoice();
    const before = await fetch(url);
    expect(before.status).toBe(200);
    expect(Buffer.from(await before.arrayBuffer()).toString()).toBe("%PDF-1.4\n% invoice SO-1002\n%%EOF\n");
    h.clock.now += FILE_RETENTION_DEFAULT_DAYS * DAY;
    await h.engine.purgeExpiredFiles();
    const after = await fetch(url);
    expect(after.status).toBe(410);
    expect(after.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await after.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("file_expired");
    expect(body.error.message).toMatch(/no longer kept.*ask the assistant for it again/);
    const unknown = await fetch(url.replace(/f_[A-Za-z0-9_-]{32}$/, `f_${"Q".repeat(32)}`));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("file_not_found");
  });

  it("a started engine purges on its own (the lifecycle runs the purge at start, then hourly)", async () => {
    h = await engineHarness({ rules });
    await h.say("my invoice please");
    const id = (await h.ofType("file"))[0]!.url.split("/").at(-1)!;
    // A second engine on the same store file, with the default lifecycle, and the period already over.
    const clock = { now: h.clock.now + 2 * DAY };
    const engine = new Engine({ store: h.store, runner: h.runner, model: new ScriptedModel([]), releases: new StaticReleases([h.release]), now: () => clock.now, fileRetentionMs: DAY });
    await engine.start();
    try {
      const deadline = Date.now() + 5000;
      while (!(await h.store.getFile(id))?.purgedAt && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await h.store.getFile(id))?.purgedAt).toBe(clock.now);
    } finally {
      await engine.stop();
    }
  });

  it("CAPLO_FILE_RETENTION_DAYS: 30 days by default, whole days from 1 to 3650, anything else refused by name", () => {
    expect(readFileRetention({})).toEqual({ ok: true, retentionMs: 30 * DAY });
    expect(readFileRetention({ CAPLO_FILE_RETENTION_DAYS: "7" })).toEqual({ ok: true, retentionMs: 7 * DAY });
    expect(readFileRetention({ CAPLO_FILE_RETENTION_DAYS: "3650" })).toEqual({ ok: true, retentionMs: 3650 * DAY });
    for (const bad of ["0", "3651", "1.5", "-3", "thirty", " 7"]) {
      expect(readFileRetention({ CAPLO_FILE_RETENTION_DAYS: bad })).toEqual({
        ok: false,
        error: { code: "file_retention_invalid", path: "CAPLO_FILE_RETENTION_DAYS", message: "a whole number of days from 1 to 3650" },
      });
    }
  });
});
