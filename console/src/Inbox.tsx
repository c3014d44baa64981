// The inbox: every conversation with its channel, customer (verified or not), last message, queue, holder
// and waiting time, live; filters (handed off, held by me, unknown writes, channel, queue) and a search by
// text, order number or customer id on the server; unread marks kept per member on the server; keyboard:
// ↑/↓ or j/k move, Enter opens, / searches.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { call, customerName, type Summary } from "./api.ts";
import { ConversationView } from "./Conversation.tsx";
import { POLL_MS, since, usePoll } from "./poll.ts";

const SEARCH_POLL_MS = 10_000;

type Filter = "all" | "handoff" | "mine" | "unknown";
const FILTERS: { id: Filter; label: string }[] = [
  { id: "all", label: "All" },
  { id: "handoff", label: "Handed off" },
  { id: "mine", label: "Held by me" },
  { id: "unknown", label: "Unknown writes" },
];

/**
 * Marks the open conversation read up to its last event, on the server (the read seq is kept per member, so
 * every browser and node shows the same unread marks); what was sent is remembered so the mark shows at once.
 */
function useReadMarks(open: Summary | undefined): Record<string, number> {
  const [sent, setSent] = useState<Record<string, number>>({});
  useEffect(() => {
    if (!open || open.lastSeq <= Math.max(open.readSeq, sent[open.id] ?? 0)) return;
    setSent((was) => ({ ...was, [open.id]: open.lastSeq }));
    void call("POST", `/v1/team/conversations/${encodeURIComponent(open.id)}/read`, { seq: open.lastSeq });
  }, [open?.id, open?.lastSeq, open?.readSeq]);
  return sent;
}

export function Inbox({ member, open }: { member: string; open: string | null }) {
  const [query, setQuery] = useState("");
  const [search, setSearch] = useState("");
  const [filter, setFilter] = useState<Filter>("all");
  const [channel, setChannel] = useState("");
  const [queue, setQueue] = useState("");
  // A search reads more of the store than the inbox's summaries: its results are asked again every 10 s.
  const { data, error } = usePoll<{ conversations: Summary[] }>(`/v1/team/inbox${search ? `?q=${encodeURIComponent(search)}` : ""}`, search ? SEARCH_POLL_MS : POLL_MS);
  const [, setNow] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const all = data?.conversations ?? [];
  const channels = [...new Set(all.map((c) => c.channel))].sort();
  const queues = [...new Set(all.map((c) => c.handoff?.queue).filter((q): q is string => !!q))].sort();
  const shown = useMemo(
    () =>
      all.filter((c) => {
        if (filter === "handoff" && !c.handoff) return false;
        if (filter === "mine" && c.handoff?.member !== member) return false;
        if (filter === "unknown" && c.unknownWrites === 0) return false;
        if (channel && c.channel !== channel) return false;
        if (queue && c.handoff?.queue !== queue) return false;
        return true;
      }),
    [all, filter, channel, queue, member],
  );
  const readHere = useReadMarks(all.find((c) => c.id === open));
  const list = useRef<HTMLUListElement>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement;
      if (event.key === "/" && !/INPUT|TEXTAREA|SELECT/.test(target.tagName)) {
        event.preventDefault();
        searchBox.current?.focus();
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);
  function move(event: KeyboardEvent) {
    const links = [...(list.current?.querySelectorAll<HTMLAnchorElement>("a.conversation") ?? [])];
    const at = links.indexOf(document.activeElement as HTMLAnchorElement);
    const step = event.key === "ArrowDown" || event.key === "j" ? 1 : event.key === "ArrowUp" || event.key === "k" ? -1 : 0;
    if (!step || links.length === 0) return;
    event.preventDefault();
    links[Math.min(links.length - 1, Math.max(0, at + step))]?.focus();
  }

  return (
    <main class="inbox" aria-label="Inbox">
      <section class="list-pane" aria-labelledby="inbox-title">
        <h1 id="inbox-title">Inbox</h1>
        <form
          role="search"
          class="search"
          onSubmit={(e) => {
            e.preventDefault();
            setSearch(query.trim());
          }}
        >
          <label for="inbox-search" class="sr-only">
            Search by text, order number or customer
          </label>
          <input ref={searchBox} id="inbox-search" type="search" placeholder="Search text, order number, customer (/)" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
          <button type="submit">Search</button>
        </form>
        <div class="filters" role="group" aria-label="Filters">
          {FILTERS.map((f) => (
            <button key={f.id} type="button" aria-pressed={filter === f.id} onClick={() => setFilter(f.id)}>
              {f.label}
            </button>
          ))}
          <label>
            <span class="sr-only">Channel</span>
            <select value={channel} onChange={(e) => setChannel((e.target as HTMLSelectElement).value)} aria-label="Channel">
              <option value="">Every channel</option>
              {channels.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span class="sr-only">Queue</span>
            <select value={queue} onChange={(e) => setQueue((e.target as HTMLSelectElement).value)} aria-label="Queue">
              <option value="">Every queue</option>
              {queues.map((q) => (
                <option key={q} value={q}>
                  {q}
                </option>
              ))}
            </select>
          </label>
        </div>
        {error && <p class="error" role="alert">{error.message}</p>}
        <p class="muted count" role="status">
          {data ? `${shown.length} conversation${shown.length === 1 ? "" : "s"}${search ? ` matching “${search}”` : ""}` : "Loading…"}
        </p>
        <ul class="conversations" ref={list} onKeyDown={move}>
          {shown.map((c) => {
            const unread = c.lastSeq > Math.max(c.readSeq, readHere[c.id] ?? 0) && c.id !== open;
            return (
              <li key={c.id}>
                <a class={`conversation${c.id === open ? " open" : ""}${unread ? " unread" : ""}`} href={`#/c/${encodeURIComponent(c.id)}`} aria-current={c.id === open ? "true" : undefined} data-id={c.id}>
                  <span class="line1">
                    {unread && <span class="dot" aria-label="unread" role="img" />}
                    <span class="customer">{customerName(c)}</span>
                    <span class={`badge ${c.customer.verified ? "ok" : ""}`}>{c.customer.verified ? "verified" : "not verified"}</span>
                    <span class="badge">{c.channel}</span>
                  </span>
                  <span class="line2" dir="auto">
                    {c.lastMessage ? `${c.lastMessage.from}: ${c.lastMessage.text}` : "No messages yet"}
                  </span>
                  <span class="line3 muted">
                    {c.handoff ? (c.handoff.state === "taken" ? `held by ${c.handoff.member === member ? "you" : c.handoff.member}` : "waiting for the team") : "with the agent"}
                    {c.handoff?.queue && ` · queue ${c.handoff.queue}`}
                    {c.waitingSince && ` · waiting ${since(c.waitingSince)}`}
                    {c.unknownWrites > 0 && (
                      <>
                        {" "}
                        <span class="badge warn">
                          {c.unknownWrites} unknown write{c.unknownWrites === 1 ? "" : "s"}
                        </span>
                      </>
                    )}
                  </span>
                </a>
              </li>
            );
          })}
        </ul>
      </section>
      <section class="detail-pane" aria-label="Conversation">
        {open ? <ConversationView key={open} id={open} member={member} /> : <p class="muted empty">Choose a conversation (↑/↓ or j/k, then Enter).</p>}
      </section>
    </main>
  );
}
