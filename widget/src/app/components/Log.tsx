// The conversation log: rows in order with a day separator where the day changes and each message's
// time, the agent's reply while it is being written, the visitor's messages in flight, and the starter
// prompts before the visitor's first message. The log is one polite live region: nothing in it is a
// live region of its own (nested live regions are read twice or not at all).
import type { Ref } from "preact";
import type { Rating } from "@caplo/shared";
import { useMemo } from "preact/hooks";
import { markdownToHtml } from "../markdown.ts";
import { RATING_PREFIX, type ConversationState, type Row } from "../conversation.ts";
import { useWidget } from "../context.ts";
import { clampText, dateTimeFormat, dateTimeFormatMade } from "../format.ts";
import { fill, type Strings } from "../i18n.ts";
import { AGENT_TEXT_SHOWN_MAX, Message } from "./Message.tsx";
import { OutcomeNotice, OutcomeUpdate, ReviewCard } from "./ReviewCard.tsx";

/** The calendar day of an ISO time in the visitor's time zone ("" when the time is missing or bad). */
function dayOf(at: string): string {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? "" : `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
}

/** "Today", "Yesterday" or the date, as the visitor's locale writes it. */
export function dayLabel(at: string, locale: string, t: Strings, now = new Date()): string {
  const d = new Date(at);
  const yesterday = new Date(now);
  yesterday.setDate(now.getDate() - 1);
  if (dayOf(at) === dayOf(now.toISOString())) return t.today;
  if (dayOf(at) === dayOf(yesterday.toISOString())) return t.yesterday;
  return dateTimeFormat(locale, { weekday: "short", day: "numeric", month: "long", ...(d.getFullYear() !== now.getFullYear() && { year: "numeric" }) }).format(d);
}

const TIME_OF_DAY: Intl.DateTimeFormatOptions = { hour: "numeric", minute: "2-digit" };

/** A message's time of day ("14:05", "2:05 PM") as the visitor's locale writes it. */
export function timeOf(at: string, locale: string): string {
  const d = new Date(at);
  return Number.isNaN(d.getTime()) ? "" : dateTimeFormat(locale, TIME_OF_DAY).format(d);
}

/** Whether timeOf's format for `locale` is made (the first one loads the browser's locale data). */
export const timeOfReady = (locale: string): boolean => dateTimeFormatMade(locale, TIME_OF_DAY);

export interface LogProps {
  state: ConversationState;
  rows: Row[];
  logRef: Ref<HTMLDivElement>;
  liveAfter: number | null;
  /** Ids of replies streamed on this page (shown open, however long: the visitor was reading them). */
  streamed?: ReadonlySet<string>;
  onScroll: (el: HTMLElement) => void;
}

export function Log({ state, rows, logRef, liveAfter, streamed, onScroll }: LogProps) {
  const { t, locale, say, connected, times, labels } = useWidget();
  const starters = state.agent?.starters ?? [];
  const visitorSpoke = state.pending.length > 0 || state.entries.some((e) => e.message.type === "text" && e.message.from === "customer");
  let lastDay = "";
  return (
    <div
      class="log"
      ref={logRef}
      role="log"
      aria-live="polite"
      aria-label={t.conversation}
      // Focusable so the keyboard can scroll it.
      tabIndex={0}
      onScroll={(e) => onScroll(e.currentTarget as HTMLElement)}
    >
      {rows.map((row) => {
        const day = dayOf(row.entry.at);
        const separator = day && day !== lastDay ? <p class="day" key={`day-${row.entry.seq}`}>{dayLabel(row.entry.at, locale, t)}</p> : null;
        if (day) lastDay = day;
        const time = times ? timeOf(row.entry.at, locale) : "";
        const m = row.entry.message;
        const side = m.type === "text" ? `side-${m.from}` : "side-agent";
        return [
          separator,
          <div class={`row ${row.kind} ${side}`} key={row.entry.seq}>
            {row.kind === "review" ? (
              <ReviewCard view={row.view} autoFocus={liveAfter !== null && row.entry.seq > liveAfter} />
            ) : row.kind === "outcome" ? (
              <OutcomeNotice outcome={row.outcome} />
            ) : row.kind === "update" ? (
              <OutcomeUpdate view={row.view} outcome={row.outcome} />
            ) : (
              <Message message={m} expanded={streamed?.has(m.id)} />
            )}
            {m.type === "text" && m.from === "agent" && <RateReply seq={row.entry.seq} />}
            {/* Until the app's time format is made, the time's line is kept, empty: nothing moves when it comes. */}
            {times ? (
              time && (
                <time class="at" dateTime={row.entry.at}>
                  {time}
                </time>
              )
            ) : (
              dayOf(row.entry.at) && (
                <span class="at" aria-hidden="true">
                  {"\u00a0"}
                </span>
              )
            )}
          </div>,
        ];
      })}
      {state.streaming && <Streaming text={state.streaming.text} />}
      {state.pending.map((p) => (
        <div class="row message side-customer" key={p.ref}>
          <div class={`bubble from-customer pending${p.error ? " failed" : ""}`}>
            {/* A tapped choice in flight shows the label the visitor tapped, as its stored message will (Message). */}
            <div class="text plain" dir="auto">
              {clampText(labels[p.text] ?? p.text)}
            </div>
            <span class="muted">{p.error ? fill(t.sendFailed, { reason: clampText(p.error, 200) }) : p.acked ? "" : t.sending}</span>
          </div>
        </div>
      ))}
      {!visitorSpoke && starters.length > 0 && (
        <div class="starters" role="group" aria-label={t.starters}>
          {starters.map((text) => (
            <button type="button" key={text} disabled={!connected} onClick={() => say(text)} dir="auto">
              {clampText(text, 80)}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

const THUMB = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";

/** Thumbs up and down under one of the agent's replies: pressed shows the visitor's rating; pressing it again takes it back. */
function RateReply({ seq }: { seq: number }) {
  const { t, used, rate, connected } = useWidget();
  if (!rate) return null;
  const current = used[`${RATING_PREFIX}${seq}`] ?? "";
  const button = (rating: Rating, label: string) => (
    <button type="button" class={`rate rate-${rating}`} aria-label={label} title={label} aria-pressed={current === rating} disabled={!connected} onClick={() => rate(seq, current === rating ? null : rating)}>
      {/* One thumb drawn (no emoji font needed); thumbs down is it turned over. */}
      <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
        <path d={THUMB} />
      </svg>
    </button>
  );
  return (
    <span class="rating">
      {button("up", t.rateUp)}
      {button("down", t.rateDown)}
    </span>
  );
}

/** The reply as far as the model has written it (the stored event replaces it with the same text). */
function Streaming({ text }: { text: string }) {
  const { t } = useWidget();
  const html = useMemo(() => markdownToHtml(clampText(text, AGENT_TEXT_SHOWN_MAX)), [text]);
  return (
    <div class="row message side-agent streaming">
      <div class="bubble from-agent" aria-busy="true">
        <span class="sr-only">{t.agent}: </span>
        <div class="text" dir="auto" dangerouslySetInnerHTML={{ __html: html }} />
      </div>
    </div>
  );
}
