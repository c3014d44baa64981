// The store query a shared bus polls while its transport is down (and for its safety net): the latest
// event seq of each conversation, read from any store that can look a conversation up.
//
// One lookup per conversation, a few at a time. A store with a batched query (one SELECT of
// `id, last_seq` for all ids) should be passed to the bus directly instead.
import type { LatestSeqs } from "./eventBus.ts";

export type ConversationSeqSource = { getConversation(id: string): Promise<{ id: string; lastSeq: number } | undefined> };

export function latestSeqsFromStore(store: ConversationSeqSource, options: { concurrency?: number } = {}): LatestSeqs {
  const concurrency = Math.max(1, Math.min(64, options.concurrency ?? 8));
  return async (ids) => {
    const latest = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const conversation = await store.getConversation(id);
        if (conversation && conversation.lastSeq > 0) latest.set(id, conversation.lastSeq);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
    return latest;
  };
}
