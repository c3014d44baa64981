// A conversation's whole history in the widget's own layouts, read-only, with the team's internal notes. The
// record brings the newest page of events (newest at the bottom, scrolled into view); older pages load when the
// member scrolls to the top or presses "Show older messages", keeping what was on screen in place, until the
// first event. Every event polled or loaded is kept, so a page that moves on as new events arrive loses nothing.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { initialState, rowsOf, type ConversationState } from "../../widget/src/app/conversation.ts";
import { defaultWidgetApi, WidgetContext } from "../../widget/src/app/context.ts";
import { Log } from "../../widget/src/app/components/Log.tsx";
import { call, type EventsPage, type Note, type StoredEvent } from "./api.ts";
import { timeOf } from "./poll.ts";

/** The widget's rows as the team sees them: read-only (nothing can be sent), in the member's locale. */
const READ_ONLY = defaultWidgetApi({ locale: navigator.language || "en" });
/** How close to the top (px) the member scrolls before the next older page loads. */
const LOAD_AT_PX = 80;

/** `known` and `more` together, by seq, oldest first; `known` itself when `more` adds nothing (nothing re-renders). */
function merged(known: StoredEvent[], more: StoredEvent[]): StoredEvent[] {
  const seqs = new Set(known.map((event) => event.seq));
  const added = more.filter((event) => !seqs.has(event.seq));
  return added.length === 0 ? known : [...known, ...added].sort((a, b) => a.seq - b.seq);
}

export function History({ id, page, notes }: { id: string; page: EventsPage; notes: Note[] }) {
  const [events, setEvents] = useState<StoredEvent[]>(page.events);
  const [olderBefore, setOlderBefore] = useState<number | null>(page.olderBefore);
  const [loading, setLoading] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const logRef = useRef<HTMLDivElement>(null);
  const panel = () => logRef.current?.closest<HTMLElement>(".tab-panel") ?? null;
  // Where the view was before older events went in above it: restored after they render.
  const keepFromBottom = useRef<number | null>(null);
  const newest = events.at(-1)?.seq ?? 0;

  useEffect(() => {
    setEvents((known) => {
      const first = page.events[0]?.seq;
      // More new events than a page since the last poll: what was kept no longer joins up; start again from here.
      if (first !== undefined && known.length > 0 && known.at(-1)!.seq < first - 1) {
        setOlderBefore(page.olderBefore);
        return page.events;
      }
      if (known.length === 0) setOlderBefore(page.olderBefore);
      return merged(known, page.events);
    });
  }, [page]);

  async function loadOlder() {
    if (loading || olderBefore === null) return;
    setLoading(true);
    const answer = await call<EventsPage>("GET", `/v1/team/conversations/${encodeURIComponent(id)}/events?before=${olderBefore}`);
    setLoading(false);
    if (!answer.ok) return setProblem(answer.error.message);
    setProblem(null);
    const view = panel();
    if (view) keepFromBottom.current = view.scrollHeight - view.scrollTop;
    setEvents((known) => merged(known, answer.value.events));
    setOlderBefore(answer.value.olderBefore);
  }

  useLayoutEffect(() => {
    const view = panel();
    if (view && keepFromBottom.current !== null) {
      view.scrollTop = view.scrollHeight - keepFromBottom.current;
      keepFromBottom.current = null;
    }
  }, [events]);

  // The newest event in view at first, and again when one arrives while the member is at the bottom.
  const atBottom = useRef(true);
  useEffect(() => {
    const view = panel();
    if (view && atBottom.current) view.scrollTop = view.scrollHeight;
  }, [newest, notes.length]);
  useEffect(() => {
    const view = panel();
    if (!view) return;
    const onScroll = () => {
      atBottom.current = view.scrollHeight - view.scrollTop - view.clientHeight < 120;
      if (view.scrollTop < LOAD_AT_PX) void loadOlder();
    };
    view.addEventListener("scroll", onScroll, { passive: true });
    return () => view.removeEventListener("scroll", onScroll);
  });

  // The log re-renders only when its events change (a poll that brings nothing new leaves a long history alone).
  const log = useMemo(() => {
    const state: ConversationState = { ...initialState, entries: events, lastSeq: newest, connection: { phase: "open", attempt: 0 } };
    return (
      <WidgetContext.Provider value={READ_ONLY}>
        <Log state={state} rows={rowsOf(events)} logRef={logRef} liveAfter={null} onScroll={() => undefined} />
      </WidgetContext.Provider>
    );
  }, [events]);
  return (
    <div class="history">
      <div class="older">
        {olderBefore !== null ? (
          <button type="button" onClick={() => void loadOlder()} disabled={loading}>
            {loading ? "Loading older messages…" : "Show older messages"}
          </button>
        ) : (
          events.length > 0 && <p class="muted">The start of the conversation.</p>
        )}
        {problem && <p class="error" role="alert">{problem}</p>}
      </div>
      {log}
      {notes.length > 0 && (
        <section class="notes" aria-label="Internal notes">
          <h3>Internal notes (the customer never sees these)</h3>
          <ul>
            {notes.map((note) => (
              <li key={note.id} class="note">
                <strong>{note.member}</strong> <span class="muted">{timeOf(note.at)}</span>
                <p dir="auto">{note.text}</p>
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}
