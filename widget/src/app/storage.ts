// What survives a page reload: the resume token (localStorage, so the visitor can come back to the
// same conversation) and the events already shown with what the visitor acted on (sessionStorage, so
// a reload restores the history at once and resumes after the last seq). Identity tokens never go here.
import type { Entry } from "./conversation.ts";
import { readOutbound } from "./frames.ts";

/** At most this many events are cached; older ones come back from the server on a full resume. */
export const CACHED_EVENTS_MAX = 300;

export interface Cached {
  conversationId: string;
  entries: Entry[];
  used: Record<string, string>;
}

function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    // Storage may be disabled (third-party iframe, private mode): the widget still works without it.
    return fallback;
  }
}

export class WidgetStorage {
  private readonly prefix: string;
  constructor(agent: string) {
    this.prefix = `caplo:${agent}:`;
  }

  resumeToken(): string | undefined {
    return safe(() => localStorage.getItem(`${this.prefix}resume`) ?? undefined, undefined);
  }

  saveResumeToken(token: string): void {
    safe(() => localStorage.setItem(`${this.prefix}resume`, token), undefined);
  }

  /** Forget the conversation (a new one starts): its resume token and the events shown. */
  clear(): void {
    safe(() => localStorage.removeItem(`${this.prefix}resume`), undefined);
    safe(() => sessionStorage.removeItem(`${this.prefix}events`), undefined);
  }

  load(): Cached | undefined {
    return safe(() => {
      const raw = sessionStorage.getItem(`${this.prefix}events`);
      if (!raw) return undefined;
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed !== "object" || parsed === null) return undefined;
      const { conversationId, entries, used } = parsed as Record<string, unknown>;
      if (typeof conversationId !== "string" || !Array.isArray(entries)) return undefined;
      const good: Entry[] = [];
      let last = 0;
      for (const e of entries as unknown[]) {
        if (typeof e !== "object" || e === null) return undefined;
        const { seq, at, message } = e as Record<string, unknown>;
        const m = readOutbound(message);
        if (typeof seq !== "number" || seq <= last || !m) return undefined; // a damaged cache: start over
        good.push({ seq, at: typeof at === "string" ? at : "", message: m });
        last = seq;
      }
      const usedMap: Record<string, string> = {};
      if (typeof used === "object" && used !== null) {
        for (const [k, v] of Object.entries(used)) if (typeof v === "string") usedMap[k] = v;
      }
      return { conversationId, entries: good, used: usedMap };
    }, undefined);
  }

  save(cached: Cached): void {
    const entries = cached.entries.slice(-CACHED_EVENTS_MAX);
    // A cache that does not start at seq 1 would hide older events: keep it only if it is complete.
    if (entries.length > 0 && entries[0]!.seq !== 1 && entries.length === CACHED_EVENTS_MAX) {
      safe(() => sessionStorage.removeItem(`${this.prefix}events`), undefined);
      return;
    }
    safe(() => sessionStorage.setItem(`${this.prefix}events`, JSON.stringify({ ...cached, entries })), undefined);
  }
}
