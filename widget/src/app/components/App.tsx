// The widget app: connects, keeps the conversation, and lays out the header, the conversation log, the
// status line (typing, the running tool's progress label, reconnecting) and the message box.
import type { ClientFrame, Inbound } from "@caplo/shared";
import { useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from "preact/hooks";
import { notifyHost, readHostCommand } from "../bridge.ts";
import { Connection } from "../connection.ts";
import { initialState, reduce, rowsOf, runningLabels, settledIds, type ConversationState } from "../conversation.ts";
import { useWidget, WidgetContext, type WidgetApi } from "../context.ts";
import { clampText, MESSAGE_MAX } from "../format.ts";
import { fill, pickStrings } from "../i18n.ts";
import type { Params } from "../params.ts";
import type { WidgetStorage } from "../storage.ts";
import { Composer } from "./Composer.tsx";
import { Message } from "./Message.tsx";
import { PagePanel, type OpenPage } from "./PagePanel.tsx";
import { OutcomeNotice, ReviewCard } from "./ReviewCard.tsx";

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
  const identity = useRef<string | null>(null);
  const identifyRef = useRef<string | null>(null);
  /** The resume token the loader keeps in the host page's storage, for when this frame's storage is blocked. */
  const hostResume = useRef<string | null>(null);
  /** Events after this seq arrived after the visitor acted in this page session: a new card takes focus. */
  const liveAfter = useRef<number | null>(null);
  const input = useRef<HTMLTextAreaElement | null>(null);
  const log = useRef<HTMLDivElement>(null);

  function sendIdentify() {
    if (!identity.current || !connection.current) return;
    const ref = nextRef();
    if (connection.current.send({ t: "identify", ref, token: identity.current })) identifyRef.current = ref;
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
        if (frame.t === "ack" && frame.ref === identifyRef.current) {
          identity.current = null; // a token is used once and never kept
          dispatch({ type: "verified" });
        }
        if (frame.t === "event" && frame.message.type !== "progress" && !(frame.message.type === "text" && frame.message.from === "customer")) {
          notifyHost({ type: "activity" }, parent, params.parentOrigin);
        }
        dispatch({ type: "frame", frame });
        if (frame.t === "welcome") sendIdentify();
      },
    });
    connection.current = conn;
    // Inside the host page, wait for the loader's init (it carries the resume token the host page keeps);
    // on its own, or if the loader does not answer, connect at once.
    const framed = parent !== null && params.parentOrigin !== null;
    let started = false;
    const begin = () => {
      if (started) return;
      started = true;
      conn.start();
    };
    const initWait = framed ? setTimeout(begin, INIT_WAIT_MS) : undefined;
    if (!framed) begin();
    const onMessage = (event: MessageEvent) => {
      const command = readHostCommand(event, parent, params.parentOrigin);
      if (!command) return;
      if (command.type === "init") {
        hostResume.current = command.resume;
        clearTimeout(initWait);
        begin();
      } else if (command.type === "identify") {
        identity.current = command.token;
        sendIdentify();
      } else if (command.type === "open" && command.focus) input.current?.focus();
    };
    window.addEventListener("message", onMessage);
    notifyHost({ type: "ready" }, parent, params.parentOrigin);
    return () => {
      clearTimeout(initWait);
      window.removeEventListener("message", onMessage);
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

  // Follow the conversation to its end while the visitor is at (or near) the end; someone who scrolled
  // up to read is left where they are. Outcomes grow a card without adding a row, so entries count.
  const atEnd = useRef(true);
  useLayoutEffect(() => {
    const el = log.current;
    if (el && atEnd.current && typeof el.scrollTo === "function") el.scrollTo({ top: el.scrollHeight });
  }, [state.entries.length, state.pending.length, state.typing, running.length]);

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

  const connected = state.connection.phase === "open";
  const api: WidgetApi = {
    t,
    locale: params.locale,
    connected,
    used,
    failed: state.failed,
    act: (id, value, event) => {
      if (used[id] !== undefined) return false;
      const ref = nextRef();
      markLive();
      if (!send(event, ref)) return false;
      dispatch({ type: "use", id, value, ref });
      if (event.type === "message") dispatch({ type: "send", ref, text: event.text });
      return true;
    },
    say: (text) => {
      const body = text.slice(0, MESSAGE_MAX);
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
  };

  const status = statusLine(state, running, t);
  return (
    <WidgetContext.Provider value={api}>
      <div class="app" style={params.color ? { "--caplo-accent": params.color } : undefined}>
        <header class="bar">
          <h1>{t.title}</h1>
          {state.verified && <span class="badge verified">{t.verified}</span>}
          <button type="button" class="icon close" aria-label={t.close} onClick={() => notifyHost({ type: "close" }, parent, params.parentOrigin)}>
            ×
          </button>
        </header>
        <ConnectionBanner state={state} onRetry={() => connection.current?.reconnectNow()} />
        <div
          class="log"
          ref={log}
          role="log"
          aria-live="polite"
          aria-label={t.conversation}
          tabIndex={-1}
          onScroll={(e) => {
            const el = e.currentTarget as HTMLElement;
            atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
          }}
        >
          {rows.map((row) =>
            row.kind === "review" ? (
              <ReviewCard key={row.entry.seq} view={row.view} autoFocus={liveAfter.current !== null && row.entry.seq > liveAfter.current} />
            ) : row.kind === "outcome" ? (
              <OutcomeNotice key={row.entry.seq} outcome={row.outcome} />
            ) : (
              <Message key={row.entry.seq} message={row.entry.message} />
            ),
          )}
          {state.pending.map((p) => (
            <div class={`bubble from-customer pending${p.error ? " failed" : ""}`} key={p.ref}>
              <div class="text plain">{clampText(p.text)}</div>
              <span class="muted">{p.error ? fill(t.sendFailed, { reason: clampText(p.error, 200) }) : p.acked ? "" : t.sending}</span>
            </div>
          ))}
        </div>
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
        {state.error && (
          <p class="error banner" role="alert">
            {fill(t.errorGeneric, { message: clampText(state.error.message, 200) })}
          </p>
        )}
        <Composer inputRef={input} />
        {page && <PagePanel page={page} onClose={closePage} />}
      </div>
    </WidgetContext.Provider>
  );
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
