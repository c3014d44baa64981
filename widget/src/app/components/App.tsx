// The widget app: connects, keeps the conversation, and lays out the header, the conversation log, the
// status line (typing, the running tool's progress label, reconnecting) and the message box.
import type { ClientFrame, Inbound, ServerFrame } from "@caplo/shared";
import { useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from "preact/hooks";
import { notifyHost, readHostCommand } from "../bridge.ts";
import { Connection } from "../connection.ts";
import { initialState, RATING_PREFIX, reduce, rowsOf, runningLabels, settledIds, type ConversationState } from "../conversation.ts";
import { useWidget, WidgetContext, type WidgetApi } from "../context.ts";
import { clampText, cutText, MESSAGE_MAX } from "../format.ts";
import { fill, pickStrings } from "../i18n.ts";
import type { Params } from "../params.ts";
import type { WidgetStorage } from "../storage.ts";
import { accentVariables } from "../color.ts";
import { transcriptText } from "../transcript.ts";
import { Composer } from "./Composer.tsx";
import { Header } from "./Header.tsx";
import { titleColumn } from "../layouts/common.tsx";
import { choiceLabels } from "../layouts/Choices.tsx";
import { whenIdle } from "../idle.ts";
import { Log, timeOf, timeOfReady } from "./Log.tsx";
import { PagePanel, type OpenPage } from "./PagePanel.tsx";

export interface AppProps {
  params: Params;
  /** The gateway's WebSocket URL (wss://HOST/v1/ws). */
  url: string;
  storage: WidgetStorage;
  /** The host page window (window.parent), or null when the app runs on its own. */
  parent: Window | null;
  WebSocketImpl?: typeof WebSocket;
}

/** How long the app waits for the loader's init before it connects without it. */
const INIT_WAIT_MS = 1500;

let refCounter = 0;
const nextRef = () => `r${Date.now().toString(36)}${(refCounter++).toString(36)}`;

function init(storage: WidgetStorage): ConversationState {
  const cached = storage.load();
  return cached ? reduce(initialState, { type: "restore", ...cached }) : initialState;
}

export function App({ params, url, storage, parent, WebSocketImpl }: AppProps) {
  const t = pickStrings(params.locale);
  const [state, dispatch] = useReducer(reduce, storage, init);
  const [page, setPage] = useState<(OpenPage & { opener: Element | null }) | null>(null);
  const stateRef = useRef(state);
  stateRef.current = state;
  const connection = useRef<Connection | null>(null);
  /** The host page's latest identity token, kept until the server has answered it (never stored). */
  const identity = useRef<string | null>(null);
  /** The identify frame in flight and the token it carried. */
  const identifying = useRef<{ ref: string; token: string } | null>(null);
  /** The resume token the loader keeps in the host page's storage, for when this frame's storage is blocked. */
  const hostResume = useRef<string | null>(null);
  /** Events after this seq arrived after the visitor acted in this page session: a new card takes focus. */
  const liveAfter = useRef<number | null>(null);
  const input = useRef<HTMLTextAreaElement | null>(null);
  const log = useRef<HTMLDivElement>(null);

  /** Replies the visitor watched being written on this page: they stay open when stored, however long. */
  const streamed = useRef(new Set<string>());
  /** Reply parts received since the last animation frame, and that frame's request. */
  const deltas = useRef<{ frames: ServerFrame[]; frame: number | null }>({ frames: [], frame: null });

  /**
   * A reply part is shown at the next animation frame, with the parts that came before it: the model's
   * tokens arrive faster than frames, and rendering the whole app for each (a layout to scroll the log)
   * kept the browser from painting the first one. A hidden page draws no frames: its parts go in at once.
   */
  function streamDelta(frame: ServerFrame) {
    const d = deltas.current;
    d.frames.push(frame);
    if (typeof document !== "undefined" && document.hidden) return flushDeltas();
    if (d.frame === null) d.frame = requestAnimationFrame(flushDeltas);
  }

  /** Applies the parts held for the next frame (before any other frame, so their order is kept). */
  function flushDeltas() {
    const d = deltas.current;
    if (d.frame !== null) cancelAnimationFrame(d.frame);
    d.frame = null;
    if (d.frames.length === 0) return;
    const frames = d.frames;
    d.frames = [];
    dispatch({ type: "frames", frames });
  }

  /** Sends the latest token once the connection is welcomed; one identify at a time, the newest wins. */
  function sendIdentify() {
    const token = identity.current;
    if (!token || identifying.current || !connection.current?.ready) return;
    const ref = nextRef();
    if (!connection.current.send({ t: "identify", ref, token })) return;
    identifying.current = { ref, token };
    dispatch({ type: "identify", ref });
  }

  useEffect(() => {
    const conn = new Connection({
      url,
      agent: params.agent,
      locale: params.locale,
      resumeToken: () => storage.resumeToken() ?? hostResume.current ?? undefined,
      lastSeq: () => stateRef.current.lastSeq,
      WebSocketImpl,
      onView: (view) => dispatch({ type: "connection", view }),
      onFrame: (frame) => {
        // Kept where the next hello reads it; signing in replaces it (the identify's ack carries the new one).
        const resumeToken = frame.t === "welcome" || frame.t === "ack" ? frame.resumeToken : undefined;
        if (resumeToken) {
          storage.saveResumeToken(resumeToken);
          hostResume.current = resumeToken;
          notifyHost({ type: "persist", resume: resumeToken }, parent, params.parentOrigin);
        }
        if (frame.t === "welcome") {
          identifying.current = null; // a new socket: an identify in flight on the old one is sent again
        }
        const answered = identifying.current;
        if ((frame.t === "ack" || frame.t === "error") && answered && frame.ref === answered.ref) {
          identifying.current = null;
          // Answered (accepted or refused): that token is not sent again; a newer one from the page is.
          if (identity.current === answered.token) identity.current = null;
        }
        if (frame.t === "event" && frame.message.type !== "progress" && !(frame.message.type === "text" && frame.message.from === "customer")) {
          notifyHost({ type: "activity" }, parent, params.parentOrigin);
        }
        if (frame.t === "delta") {
          streamed.current.add(frame.id);
          return streamDelta(frame);
        }
        flushDeltas();
        dispatch({ type: "frame", frame });
        if (frame.t === "welcome" || frame.t === "ack" || frame.t === "error") sendIdentify();
      },
    });
    connection.current = conn;
    // Inside the host page, say hello after the loader's init (it carries the resume token the host page
    // keeps), with the socket already opening meanwhile; on its own, or if the loader does not answer,
    // at once. A frame the loader made ahead of a click connects only on init: no socket, no conversation
    // for a visitor who never opens the chat.
    const framed = parent !== null && params.parentOrigin !== null;
    let started = false;
    const begin = () => {
      if (started) return;
      started = true;
      conn.start();
    };
    const initWait = framed && !params.preload ? setTimeout(begin, INIT_WAIT_MS) : undefined;
    if (!framed) begin();
    else if (!params.preload) conn.preconnect();
    const onMessage = (event: MessageEvent) => {
      const command = readHostCommand(event, parent, params.parentOrigin);
      if (!command) return;
      if (command.type === "init") {
        hostResume.current = command.resume;
        clearTimeout(initWait);
        begin();
      } else if (command.type === "identify") {
        // Kept until the connection is ready (the chat may still be loading): the latest token wins.
        identity.current = command.token;
        sendIdentify();
      } else if (command.type === "warm") {
        if (!started) conn.preconnect();
      } else if (command.type === "open" && command.focus) input.current?.focus();
    };
    window.addEventListener("message", onMessage);
    notifyHost({ type: "ready" }, parent, params.parentOrigin);
    return () => {
      clearTimeout(initWait);
      window.removeEventListener("message", onMessage);
      if (deltas.current.frame !== null) cancelAnimationFrame(deltas.current.frame);
      conn.stop();
    };
  }, []);

  // Keep what a reload needs: the events shown and what the visitor already acted on. A layout effect,
  // so it is written before the page can go away.
  useLayoutEffect(() => {
    if (state.conversationId) storage.save({ conversationId: state.conversationId, entries: state.entries, used: state.used });
  }, [state.conversationId, state.entries, state.used]);

  const rows = useMemo(() => rowsOf(state.entries), [state.entries]);
  const running = useMemo(() => runningLabels(state.entries), [state.entries]);
  const used = useMemo(() => ({ ...settledIds(state.entries), ...state.used }), [state.entries, state.used]);
  // What this page tapped wins; a history from the server (another tab) still shows a choice's label.
  const labels = useMemo(() => ({ ...choiceLabels(state.entries.map((e) => e.message)), ...labelsOf(state.used) }), [state.entries, state.used]);
  const writeStates = useMemo(() => writeStatesOf(state.entries), [state.entries]);
  const latestStepUp = useMemo(() => latestStepUpOf(state.entries, writeStates, state.verifiedSeq), [state.entries, writeStates, state.verifiedSeq]);
  const names = useMemo(() => namesOf(state.entries), [state.entries]);

  // Follow the conversation to its end while the visitor is at (or near) the end; someone who scrolled
  // up to read is left where they are. Outcomes grow a card without adding a row, so entries count.
  const atEnd = useRef(true);
  useLayoutEffect(() => {
    const el = log.current;
    // An empty log has nothing to follow: not measuring it keeps the first render from laying the app out.
    const empty = state.entries.length === 0 && state.pending.length === 0 && !state.typing && running.length === 0 && !state.streaming;
    if (el && atEnd.current && !empty && typeof el.scrollTo === "function") el.scrollTo({ top: el.scrollHeight });
  }, [state.entries.length, state.pending.length, state.typing, running.length, state.streaming?.text]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape") return;
      if (page) closePage(false);
      else notifyHost({ type: "close" }, parent, params.parentOrigin);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [page]);

  function markLive() {
    atEnd.current = true; // the visitor acted: show what follows
    if (liveAfter.current === null) liveAfter.current = stateRef.current.lastSeq;
  }

  function send(event: Inbound, ref: string): boolean {
    const frame: ClientFrame = { t: "in", ref, event };
    return connection.current?.send(frame) ?? false;
  }

  function closePage(done: boolean) {
    const opener = page?.opener;
    setPage(null);
    if (done) api.say(t.pageDone);
    if (opener instanceof HTMLElement) opener.focus();
  }

  /** A new conversation: the resume token is forgotten (here and in the host page) and a new hello says none. */
  function restart() {
    storage.clear();
    hostResume.current = null;
    notifyHost({ type: "persist", resume: "" }, parent, params.parentOrigin);
    liveAfter.current = null;
    dispatch({ type: "reset" });
    connection.current?.restart();
    input.current?.focus();
  }

  function downloadTranscript() {
    const text = transcriptText(state.entries, { t, locale: params.locale, labels, names, used: state.used });
    const href = URL.createObjectURL(new Blob([text], { type: "text/plain;charset=utf-8" }));
    const a = document.createElement("a");
    a.href = href;
    a.download = `${t.transcriptName}-${new Date().toISOString().slice(0, 10)}.txt`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(href), 60_000);
  }

  const connected = state.connection.phase === "open";
  // Messages' times wait for their format: making the first loads the browser's locale data, one call of 10
  // to 30 ms of CPU on a desktop that cannot be split. It is made when idle once the app has begun to
  // connect (the visitor opened the chat, or the app runs on its own page): never while the host page loads,
  // where a frame made ahead of the click shares the page's main thread on Android, and not on the greeting's
  // way to the screen. The rows get their times in the render after.
  const [times, setTimes] = useState(() => timeOfReady(params.locale));
  const begun = state.connection.phase !== "connecting";
  useEffect(() => {
    if (times || !begun) return;
    return whenIdle(() => {
      timeOf(new Date().toISOString(), params.locale);
      setTimes(true);
    });
  }, [times, begun]);
  const api: WidgetApi = {
    t,
    locale: params.locale,
    connected,
    used,
    failed: state.failed,
    act: (id, value, event, label) => {
      if (used[id] !== undefined) return false;
      const ref = nextRef();
      markLive();
      if (!send(event, ref)) return false;
      dispatch({ type: "use", id, value, ref });
      if (event.type === "message") {
        if (label) dispatch({ type: "use", id: `${LABEL_PREFIX}${event.text}`, value: label });
        dispatch({ type: "send", ref, text: event.text });
      }
      return true;
    },
    rate: (seq, rating) => {
      const ref = nextRef();
      if (!connection.current?.send({ t: "rate", ref, seq, rating })) return false;
      // Kept with what the visitor used (so a reload shows it); refused, it is taken back.
      dispatch({ type: "use", id: `${RATING_PREFIX}${seq}`, value: rating ?? "", ref });
      return true;
    },
    say: (text) => {
      const body = cutText(text, MESSAGE_MAX);
      const ref = nextRef();
      markLive();
      if (!body || !send({ type: "message", text: body }, ref)) return false;
      dispatch({ type: "send", ref, text: body });
      return true;
    },
    openPage: (pageUrl, origins, title) => setPage({ url: pageUrl, origins, title, opener: document.activeElement }),
    requestStepUp: (level, maxAuthAgeSeconds) =>
      notifyHost({ type: "step_up", level, ...(maxAuthAgeSeconds !== undefined ? { maxAuthAgeSeconds } : {}) }, parent, params.parentOrigin),
    verifications: state.verifications,
    verified: state.verified,
    latestStepUp,
    writeStates,
    keep: (key, value) => dispatch({ type: "use", id: key, value }),
    labels,
    names,
    mapTiles: state.agent?.mapTiles,
    times,
  };

  const status = statusLine(state, running, t);
  const handedOff = state.entries.some((e) => e.message.type === "handoff") && lastHandoff(state) !== "released";
  return (
    <WidgetContext.Provider value={api}>
      <div class="app" style={params.color ? accentVariables(params.color) : undefined}>
        <Header
          agent={state.agent}
          verified={state.verified}
          canRestart={connected && state.entries.some((e) => e.message.type === "text" && e.message.from === "customer")}
          onRestart={restart}
          onTranscript={downloadTranscript}
          onClose={() => notifyHost({ type: "close" }, parent, params.parentOrigin)}
        />
        <ConnectionBanner state={state} onRetry={() => connection.current?.reconnectNow()} />
        {/* The cards' headings (h3) sit under this one, not straight under the agent's name (h1). */}
        <h2 class="sr-only">{t.conversation}</h2>
        <Log
          state={state}
          rows={rows}
          logRef={log}
          liveAfter={liveAfter.current}
          streamed={streamed.current}
          onScroll={(el) => {
            atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
          }}
        />
        <p class="statusline" role="status">
          {status && (
            <>
              <span class="dots" aria-hidden="true">
                <i />
                <i />
                <i />
              </span>
              {status}
            </>
          )}
        </p>
        {state.verifyProblem && (
          <p class="error banner" role="alert">
            {{ expired: t.verifyExpired, invalid: t.verifyInvalid, unavailable: t.verifyUnavailable }[state.verifyProblem]}
          </p>
        )}
        {state.error && (
          <p class="error banner" role="alert">
            {fill(t.errorGeneric, { message: clampText(state.error.message, 200) })}
          </p>
        )}
        {state.agent?.handoff && !handedOff && connected && (
          <div class="assist">
            <button type="button" class="link" onClick={() => api.say(t.talkToPersonText)}>
              {t.talkToPerson}
            </button>
          </div>
        )}
        <Composer
          inputRef={input}
          streaming={state.streaming !== null}
          onStop={() => {
            connection.current?.send({ t: "stop", ref: nextRef() });
          }}
        />
        {page && <PagePanel page={page} onClose={closePage} />}
      </div>
    </WidgetContext.Provider>
  );
}

/** The state of the conversation's latest handoff notice, if any. */
function lastHandoff(state: ConversationState): string | undefined {
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const m = state.entries[i]!.message;
    if (m.type === "handoff") return m.state;
  }
  return undefined;
}

/** Used-map keys under which a tapped choice's label is kept, by the message it sent. */
const LABEL_PREFIX = "label:";
function labelsOf(used: Record<string, string>): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(used)) if (key.startsWith(LABEL_PREFIX)) labels[key.slice(LABEL_PREFIX.length)] = value;
  return labels;
}

/**
 * The names results showed for ids: each item's title, by every other string value of the item (`key\u0000value`).
 * A card shows the name in place of the value that runs, so a name must stand for one value only: a value
 * results named two ways is shown as it is, and a name shown for several values of a key (two items titled
 * alike, one of them planted) is shown with its value, "Sat 15:00 (slot_9)".
 */
export function namesOf(entries: ConversationState["entries"]): Record<string, string> {
  const found = new Map<string, string | null>();
  const valuesOf = new Map<string, Set<string>>();
  for (const { message: m } of entries) {
    if (m.type !== "result") continue;
    const title = titleColumn(m.columns);
    if (!title) continue;
    for (const item of m.items) {
      const name = item[title.key];
      if (typeof name !== "string" || !name) continue;
      for (const column of m.columns) {
        const value = item[column.key];
        if (column === title || column.display !== "plain" || typeof value !== "string" || !value) continue;
        const key = `${column.key}\u0000${value}`;
        const earlier = found.get(key);
        found.set(key, earlier === undefined || earlier === name ? name : null);
        const alike = `${column.key}\u0000${name}`;
        valuesOf.set(alike, (valuesOf.get(alike) ?? new Set()).add(value));
      }
    }
  }
  const names: Record<string, string> = {};
  for (const [key, name] of found) {
    if (name === null) continue;
    const cut = key.indexOf("\u0000");
    const column = key.slice(0, cut);
    const value = key.slice(cut + 1);
    names[key] = valuesOf.get(`${column}\u0000${name}`)!.size > 1 ? `${name} (${value})` : name;
  }
  return names;
}

/** Each write's state as of its latest review or outcome event, by proposal id. */
function writeStatesOf(entries: ConversationState["entries"]): Record<string, string> {
  const states: Record<string, string> = {};
  for (const { message: m } of entries) if (m.type === "review" || m.type === "outcome") states[m.proposalId] = m.state;
  return states;
}

/**
 * The latest step-up prompt still asking (one prompt at a time): a read's while the visitor has not written
 * since and has not been verified since (the read waits only then); a write's while its write still waits
 * for the customer to verify (step_up_required), whatever the visitor wrote meanwhile, and only the latest
 * prompt of that write.
 */
function latestStepUpOf(entries: ConversationState["entries"], writeStates: Record<string, string>, verifiedSeq: number): string | null {
  let visitorSince = false;
  const proposals = new Set<string>();
  for (let i = entries.length - 1; i >= 0; i--) {
    const { seq, message: m } = entries[i]!;
    if (m.type === "text" && m.from === "customer") visitorSince = true;
    if (m.type !== "step_up") continue;
    if (m.proposalId) {
      if (proposals.has(m.proposalId)) continue;
      proposals.add(m.proposalId);
      if (writeStates[m.proposalId] === "step_up_required") return m.id;
    } else if (!visitorSince && seq > verifiedSeq) return m.id;
  }
  return null;
}

/** The running tool's static progress label wins over "typing". */
function statusLine(state: ConversationState, running: string[], t: ReturnType<typeof pickStrings>): string {
  const label = running.find((l) => l.length > 0);
  if (label) return clampText(label, 40);
  if (running.length > 0 || state.typing) return t.typing;
  return "";
}

function ConnectionBanner({ state, onRetry }: { state: ConversationState; onRetry: () => void }) {
  const { t } = useWidget();
  const [now, setNow] = useState(Date.now());
  const { phase, retryAt } = state.connection;
  useEffect(() => {
    if (phase !== "waiting" && phase !== "offline") return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [phase, retryAt]);
  // Refused for good: the error banner says why; there is nothing to wait for or retry.
  if (phase === "open" || phase === "refused") return null;
  if (phase === "connecting") {
    return (
      <p class="conn connecting" role="status">
        {t.connecting}
      </p>
    );
  }
  const seconds = Math.max(0, Math.ceil(((retryAt ?? now) - now) / 1000));
  return (
    <div class="conn waiting" role="status">
      <span>{phase === "offline" ? t.offline : fill(t.reconnecting, { seconds })}</span>
      <button type="button" class="link" onClick={onRetry}>
        {t.reconnectNow}
      </button>
    </div>
  );
}
