// What every InboxStore does with delivery statuses, checked on SQLite (sqliteInboxStore.test.ts) and on
// PostgreSQL (cluster/postgresInboxStore.test.ts): a status is kept once per part and status, even when it
// arrives before the part's own record; a conversation's outbox lists its parts by seq and part, each with
// its statuses oldest first and its error code; another platform's id or another conversation's part
// never gets them.
import { expect } from "vitest";
import type { InboxStore } from "../ports.ts";

export async function checkDeliveryStatuses(store: InboxStore, conversationId: string): Promise<void> {
  const other = `${conversationId}-other`;
  const sent = { platform: "whatsapp" as const, state: "sent" as const, attempts: 1 };
  expect(await store.recordStatus("whatsapp", `${conversationId}-early`, { status: "sent", at: 5 })).toBe(true);
  await store.recordOutbox({ ...sent, conversationId, seq: 2, part: 0, platformId: `${conversationId}-early`, at: 4 });
  await store.recordOutbox({ ...sent, conversationId, seq: 1, part: 1, platformId: `${conversationId}-b`, at: 3 });
  await store.recordOutbox({ ...sent, conversationId, seq: 1, part: 0, platformId: `${conversationId}-a`, at: 2 });
  await store.recordOutbox({ ...sent, conversationId: other, seq: 1, part: 0, platformId: `${conversationId}-z`, at: 2 });
  expect(await store.recordStatus("whatsapp", `${conversationId}-a`, { status: "delivered", at: 7 })).toBe(true);
  // A repeated callback is kept once, with its first time.
  expect(await store.recordStatus("whatsapp", `${conversationId}-a`, { status: "delivered", at: 8 })).toBe(false);
  expect(await store.recordStatus("whatsapp", `${conversationId}-a`, { status: "sent", at: 6 })).toBe(true);
  expect(await store.recordStatus("whatsapp", `${conversationId}-b`, { status: "undelivered", at: 9, errorCode: 63016 })).toBe(true);
  expect(await store.recordStatus("messenger", `${conversationId}-a`, { status: "read", at: 10 })).toBe(true);
  expect(await store.recordStatus("whatsapp", `${conversationId}-z`, { status: "read", at: 11 })).toBe(true);

  const parts = await store.listOutbox(conversationId);
  expect(parts.map((part) => [part.seq, part.part, part.platformId])).toEqual([
    [1, 0, `${conversationId}-a`],
    [1, 1, `${conversationId}-b`],
    [2, 0, `${conversationId}-early`],
  ]);
  expect(parts[0]!.statuses).toEqual([
    { status: "sent", at: 6 },
    { status: "delivered", at: 7 },
  ]);
  expect(parts[1]!.statuses).toEqual([{ status: "undelivered", at: 9, errorCode: 63016 }]);
  expect(parts[2]!.statuses).toEqual([{ status: "sent", at: 5 }]);
  expect((await store.listOutbox(other))[0]!.statuses).toEqual([{ status: "read", at: 11 }]);
  expect(await store.listOutbox(`${conversationId}-none`)).toEqual([]);
}
