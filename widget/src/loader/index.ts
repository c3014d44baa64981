// The script-tag loader: `<script src="https://HOST/widget.js" data-agent="NAME" async></script>` (or added
// after the page's load event by the snippet in docs/site-owners/embedding.md: it works the same).
// While the page loads it draws only the launcher in a shadow root (so the host page's CSS cannot reach it), creates the
// app's iframe from the same host ahead of the first open (when the browser is idle after the page's
// load event, or at once when the visitor points at or focuses the launcher; never before the page has
// loaded), lets the app connect only once the visitor wants the chat, and offers window.Caplo (open, close, toggle,
// identify, on). Messages go to the iframe only at HOST's origin and are accepted only from that frame
// at that origin; the app checks the other direction against this page's origin.

type Handler = (detail: Record<string, unknown>) => void;
interface CaploApi {
  version: 1;
  open(): void;
  close(): void;
  toggle(): void;
  identify(token: string): void;
  on(event: "open" | "close" | "step_up", handler: Handler): void;
  /** The queued form keeps working after the script has loaded: Caplo.push(["identify", token]). */
  push(...calls: Queued[]): number;
}
type Queued = [string, ...unknown[]];

const LABELS: Record<string, [open: string, close: string, title: string, unread: string, unavailable: string]> = {
  en: ["Open chat", "Close chat", "Chat", "unread", "This chat is not available on this page."],
  sl: ["Odpri klepet", "Zapri klepet", "Klepet", "neprebrano", "Ta klepet na tej strani ni na voljo."],
  de: ["Chat öffnen", "Chat schließen", "Chat", "ungelesen", "Dieser Chat ist auf dieser Seite nicht verfügbar."],
};
/** How long after the app's page has loaded the loader waits for its ready before it says the chat is unavailable. */
const READY_WAIT_MS = 4000;
/** The longest the loader waits for an idle moment after the page's load event before it makes the app's frame. */
const IDLE_WAIT_MS = 3000;
const COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
// An agent's name, or WORKSPACE/NAME for an agent of another workspace than default (docs/operators/workspaces.md).
const AGENT = /^(?:[a-z][a-z0-9-]{1,39}\/)?[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
const LOCALE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
const TOKEN_MAX = 8192;
const ICON =
  '<svg viewBox="0 0 24 24" width="28" height="28" aria-hidden="true"><path fill="currentColor" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';
const CLOSE_ICON =
  '<svg viewBox="0 0 24 24" width="26" height="26" aria-hidden="true"><path fill="none" stroke="currentColor" stroke-width="2.5" stroke-linecap="round" d="M6 6l12 12M18 6L6 18"/></svg>';

/** Runs `work` when the browser is next idle (at the latest after IDLE_WAIT_MS). */
function whenIdle(work: () => void): void {
  const idle = (window as { requestIdleCallback?: (cb: () => void, options: { timeout: number }) => number }).requestIdleCallback;
  if (idle) idle(work, { timeout: IDLE_WAIT_MS });
  else setTimeout(work, 1);
}

/** Text on the launcher: white where it reads at 4.5:1 on the colour, else near-black (WCAG relative luminance). */
function inkOn(hex: string): string {
  const h = hex.length === 4 ? hex.replace(/[0-9a-f]/gi, "$&$&") : hex;
  const lum = [1, 3, 5]
    .map((i) => parseInt(h.slice(i, i + 2), 16) / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4))
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i]!, 0);
  return 1.05 / (lum + 0.05) >= 4.5 || 1.05 / (lum + 0.05) >= (lum + 0.05) / 0.0555 ? "#fff" : "#111318";
}

function start(script: HTMLScriptElement): void {
  const w = window as unknown as { Caplo?: CaploApi | Queued[] };
  if (w.Caplo && !Array.isArray(w.Caplo)) return; // loaded twice: the first loader stays in charge
  const queued = Array.isArray(w.Caplo) ? w.Caplo : [];
  const host = new URL(script.src).origin;
  const data = script.dataset;
  const agent = data.agent ?? "";
  if (!AGENT.test(agent)) {
    console.error("Caplo: data-agent is missing or not a valid agent name");
    return;
  }
  const left = data.position === "left";
  const color = COLOR.test(data.color ?? "") ? data.color! : "#2457d6";
  const ink = inkOn(color);
  const locale = LOCALE.test(data.locale ?? "") ? data.locale! : navigator.language || "en";
  const labels = LABELS[locale.slice(0, 2).toLowerCase()] ?? LABELS.en!;

  const theme = data.theme === "dark" || data.theme === "light" ? data.theme : "";
  /** A phone: the open panel fills the screen (and data-open does not open it on load). */
  const phone = () => matchMedia("(max-width: 480px)").matches;

  const root = document.createElement("div");
  root.setAttribute("data-caplo", "");
  // The host element's own box: inline and !important, so the page's CSS cannot hide, fade or move it.
  root.setAttribute("style", "all:initial!important;display:block!important;opacity:1!important;visibility:visible!important;filter:none!important;transform:none!important;position:static!important");
  // Open, on purpose (docs/site-owners/embedding.md): the boundary that protects the conversation is the
  // cross-origin iframe, which the page cannot read either way; a closed root would only hide the launcher
  // from the page's own test tools and browser extensions, not from the page, which could replace it anyway.
  // The page's CSS cannot reach into either kind of root.
  const shadow = root.attachShadow({ mode: "open" });
  const side = left ? "left" : "right";
  const other = left ? "right" : "left";
  // The launcher's focus ring is white then near-black, whatever data-color is: one of the two reads at 3:1
  // on any page behind it (a ring in the accent vanished on a light accent over a light page).
  // The launcher and the panel are popovers in the browser's top layer where it has one: no z-index
  // or overlay of the page can cover them.
  shadow.innerHTML =
    `<style>` +
    `:host{all:initial}` +
    `[popover]{margin:0;padding:0;border:0;overflow:visible}` +
    `button{position:fixed;top:auto;bottom:20px;${side}:20px;${other}:auto;z-index:2147483647;width:60px;height:60px;border-radius:50%;border:0;` +
    `background:${color};color:${ink};cursor:pointer;display:grid;place-items:center;box-shadow:0 4px 16px rgba(0,0,0,.25);transition:transform .15s}` +
    `button>*{pointer-events:none}button:hover{transform:scale(1.05)}button:focus-visible{outline:3px solid #111318;outline-offset:3px;box-shadow:0 0 0 3px #fff}` +
    `i{position:absolute;top:0;right:0;min-width:20px;height:20px;padding:0 5px;box-sizing:border-box;border-radius:10px;background:#c62828;color:#fff;border:2px solid #fff;display:none;font:700 11px/16px system-ui,sans-serif;font-style:normal}` +
    `.unread i{display:block}` +
    `div{position:fixed;top:auto;bottom:92px;${side}:20px;${other}:auto;z-index:2147483647;width:min(400px,calc(100vw - 40px));` +
    // The top 108 px stay free: the page's own header (its sign-in, its cart) is not covered on desktop.
    `height:min(640px,calc(100vh - 200px));min-height:min(420px,calc(100vh - 112px));border-radius:14px;overflow:hidden;box-shadow:0 8px 32px rgba(0,0,0,.3);` +
    `display:none;background:#fff;transition:transform .15s}` +
    `.open div{display:block}` +
    // A frame made ahead of a click is laid out and painted at its real size but not seen (opacity, not
    // visibility: a hidden cross-origin frame is not painted until it is shown), clicked or focused (inert):
    // opening it then only composites.
    `.pre div{display:block;opacity:0;pointer-events:none}` +
    `iframe{border:0;width:100%;height:100%;display:block}` +
    `p{margin:0;padding:24px;font:15px/1.45 system-ui,sans-serif;color:#1b1e24}` +
    `@media (max-width:480px){div{inset:0;width:100%;height:100%;min-height:0;border-radius:0}.open button{display:none}}` +
    `@media (prefers-reduced-motion:reduce){button,div{transition:none}}` +
    `</style><section><button type="button" aria-expanded="false" aria-controls="p" popover="manual" aria-label="${labels[0]}"><i aria-hidden="true">0</i>${ICON}</button></section>`;
  const wrap = shadow.querySelector("section")!;
  const launcher = shadow.querySelector("button")!;
  const badge = launcher.querySelector("i")!;
  /** The panel that holds the app's frame: made with the frame (when idle after load, or when wanted), not while the page loads. */
  let panel: HTMLDivElement | null = null;
  const makePanel = (): HTMLDivElement => {
    if (panel) return panel;
    panel = document.createElement("div");
    panel.id = "p";
    panel.setAttribute("role", "dialog");
    panel.setAttribute("popover", "manual");
    panel.setAttribute("aria-label", labels[2]);
    wrap.appendChild(panel);
    return panel;
  };

  let frame: HTMLIFrameElement | null = null;
  let ready = false;
  /** The visitor wants the chat (opened it, or pressed the launcher): the app may connect. */
  let wanted = false;
  let initSent = false;
  let warmed = false;
  /** The app's frame never said ready: the notice stays (a reload tries again). */
  let failed = false;
  let isOpen = false;
  let token: string | null = null;
  /** Whether the last open was the visitor's (keyboard goes into the app) or the page's on load (it does not). */
  let focusApp = true;
  let unread = 0;
  let readyTimer: ReturnType<typeof setTimeout> | undefined;
  const handlers: Record<string, Handler[]> = {};
  // The resume token lives in the host page's own storage: the app's iframe is third-party here, and
  // browsers often block or partition its storage.
  const resumeKey = `caplo:${agent}:resume`;
  const read = (key: string): string | null => {
    try {
      return localStorage.getItem(key);
    } catch {
      return null;
    }
  };
  const write = (key: string, value: string) => {
    try {
      localStorage.setItem(key, value);
    } catch {
      // No storage: the conversation starts afresh after a reload.
    }
  };

  const emit = (event: string, detail: Record<string, unknown> = {}) => {
    for (const handler of handlers[event] ?? []) {
      try {
        handler(detail);
      } catch (error) {
        console.error(error);
      }
    }
  };
  /** Posts to the app; false when it is not there or not ready yet (nothing is sent then). */
  const post = (message: Record<string, unknown>): boolean => {
    if (!frame?.contentWindow || !ready) return false;
    // targetOrigin is HOST: the message is dropped if the frame navigated anywhere else.
    frame.contentWindow.postMessage({ caplo: 1, ...message }, host);
    return true;
  };
  const flush = () => {
    // Kept until the app has it (the chat may be closed or still loading); handed over once, then not kept here.
    if (token && post({ type: "identify", token })) token = null;
    if (isOpen) post({ type: "open", focus: focusApp });
  };
  /** Shows or hides an element in the top layer, once per change (each call is a style update of the page). */
  const popover = (el: HTMLElement, shown: boolean) => {
    try {
      if (el.matches(":popover-open") !== shown) {
        if (shown) el.showPopover?.();
        else el.hidePopover?.();
      }
    } catch {
      // No popover support: z-index still places it.
    }
  };
  /** Draws what changed since the last render; until the panel is made, only the launcher's state. */
  const render = () => {
    const ahead = panel !== null && !failed;
    const className = isOpen ? "open" : `${unread > 0 ? "unread" : ""}${ahead ? " pre" : ""}`;
    if (wrap.className !== className) wrap.className = className;
    launcher.setAttribute("aria-expanded", String(isOpen));
    // The unread count is part of the launcher's name: "Open chat, 2 unread".
    launcher.setAttribute("aria-label", isOpen ? labels[1] : unread > 0 ? `${labels[0]}, ${unread} ${labels[3]}` : labels[0]);
    // The icon is replaced only when it changes, and the count written into its badge: a press on the launcher
    // whose target node was replaced before the release (the greeting's unread count arrives in between) would
    // give no click.
    const icon = isOpen ? CLOSE_ICON : ICON;
    if (shownIcon !== icon) {
      launcher.lastElementChild!.outerHTML = icon;
      shownIcon = icon;
    }
    badge.textContent = unread > 9 ? "9+" : String(unread);
    if (drawn) popover(launcher, true);
    if (!panel) return;
    // The frame made ahead of a click is out of reach of the keyboard and assistive technology until opened.
    panel.inert = !isOpen;
    if (isOpen) panel.removeAttribute("aria-hidden");
    else panel.setAttribute("aria-hidden", "true");
    // On a phone the panel fills the screen: the page behind it does not scroll. Written only when that changes.
    const lock = isOpen && phone();
    if (lock !== scrollLocked) {
      if (lock) scrollBefore = document.documentElement.style.overflow;
      document.documentElement.style.overflow = lock ? "hidden" : scrollBefore;
      scrollLocked = lock;
    }
    popover(panel, isOpen || ahead);
  };
  /** The launcher is put in the top layer at the page's next frame, not during the script's run (see below). */
  let drawn = false;
  let scrollBefore = "";
  let scrollLocked = false;
  let shownIcon = ICON;
  /** The app never said ready: the agent is unknown or this page's origin is not allowed (its frame was refused). */
  const unavailable = () => {
    if (ready || !frame) return;
    const text = document.createElement("p");
    text.setAttribute("role", "alert");
    text.textContent = labels[4];
    frame.replaceWith(text);
    frame = null;
    failed = true;
    render();
    console.error(
      `Caplo: the chat for agent "${agent}" did not start on ${location.origin}. Check that ${host} serves an agent named "${agent}" and that "${location.origin}" is listed in the origins of its agent.yaml.`,
    );
  };

  /**
   * Makes the app's frame in the (still hidden) panel, once. Made ahead of a click it loads and renders the
   * app but opens no socket until the init says the visitor wants the chat.
   */
  function makeFrame(): void {
    if (frame || failed) return;
    frame = document.createElement("iframe");
    const q = new URLSearchParams({ agent, locale, color, origin: location.origin, ...(theme && { theme }), ...(!wanted && { preload: "1" }) });
    frame.src = `${host}/widget/app.html?${q}`;
    frame.title = labels[2];
    frame.setAttribute("allow", "clipboard-write");
    // A refused frame still fires load (an error page): no ready after it means the chat cannot start here.
    frame.addEventListener("load", () => {
      clearTimeout(readyTimer);
      readyTimer = setTimeout(unavailable, READY_WAIT_MS);
    });
    makePanel().appendChild(frame);
    render();
  }
  /**
   * The frame made ahead of a click, in two idle tasks so that neither is long on a slow phone: first the
   * (transparent) panel in the top layer, then the frame in it.
   */
  function makeAhead(): void {
    if (frame || failed) return;
    if (!panel) {
      makePanel();
      render();
      whenIdle(makeAhead);
    } else makeFrame();
  }
  /**
   * The visitor points at or focuses the launcher: the frame is made, and its app opens its socket without
   * saying hello (no conversation starts; the gateway closes it after its hello timeout if no click follows).
   */
  function warm(): void {
    makeFrame();
    warmed = true;
    if (ready && !initSent) post({ type: "warm" });
  }
  /** The visitor wants the chat: the frame is made if it is not yet, and the app connects once it is ready. */
  function want(): void {
    wanted = true;
    makeFrame();
    if (ready && !initSent) {
      initSent = true;
      post({ type: "init", resume: read(resumeKey) });
    }
  }

  /** Opens the panel; `focus` moves the keyboard into it (not when the page opens it on load). */
  function open(focus = true): void {
    if (isOpen) return;
    isOpen = true;
    drawn = true;
    unread = 0;
    focusApp = focus;
    want();
    render();
    if (focus) frame?.focus();
    flush();
    emit("open");
  }
  function close(): void {
    if (!isOpen) return;
    isOpen = false;
    render();
    launcher.focus();
    emit("close");
  }

  window.addEventListener("message", (event: MessageEvent) => {
    if (!frame || event.source !== frame.contentWindow || event.origin !== host) return;
    const message = event.data as Record<string, unknown> | null;
    if (!message || message.caplo !== 1) return;
    if (message.type === "ready") {
      ready = true;
      clearTimeout(readyTimer);
      if (wanted) {
        initSent = true;
        post({ type: "init", resume: read(resumeKey) });
      } else if (warmed) post({ type: "warm" });
      flush();
    } else if (message.type === "persist" && typeof message.resume === "string" && message.resume.length <= 512) {
      write(resumeKey, message.resume);
    } else if (message.type === "close") close();
    else if (message.type === "activity" && !isOpen) {
      unread++;
      render();
    }
    else if (message.type === "step_up") {
      const detail = { level: String(message.level), maxAuthAgeSeconds: message.maxAuthAgeSeconds };
      emit("step_up", detail);
      window.dispatchEvent(new CustomEvent("caplo:step-up", { detail }));
    }
  });
  launcher.addEventListener("click", () => (isOpen ? close() : open()));
  // Pointing at or focusing the launcher fetches the app at once and opens its socket; pressing it also
  // says hello, a few dozen milliseconds before the click.
  launcher.addEventListener("pointerenter", warm);
  launcher.addEventListener("focus", warm);
  launcher.addEventListener("pointerdown", want);
  shadow.addEventListener("keydown", (event) => {
    if ((event as KeyboardEvent).key === "Escape") close();
  });

  const api: CaploApi = {
    version: 1,
    open: () => open(),
    close,
    toggle: () => (isOpen ? close() : open()),
    identify(value: string) {
      if (typeof value !== "string" || value.length === 0 || value.length > TOKEN_MAX) {
        console.error("Caplo.identify: the token must be a non-empty string of at most 8192 characters");
        return;
      }
      // The latest token is kept until the app is ready for it (the chat may be closed or still loading).
      token = value;
      flush();
    },
    on(event, handler) {
      if (typeof handler === "function") (handlers[event] ??= []).push(handler);
    },
    push(...calls) {
      for (const call of calls) run(call);
      return calls.length;
    },
  };
  const run = (call: unknown) => {
    if (!Array.isArray(call)) return;
    const [name, ...args] = call as Queued;
    const fn = name === "push" ? undefined : (api as unknown as Record<string, unknown>)[name];
    if (typeof fn === "function") (fn as (...a: unknown[]) => void).apply(api, args);
    else console.error(`Caplo: unknown call ${JSON.stringify(String(name)).slice(0, 40)}`);
  };
  w.Caplo = api;
  // In the page first: showPopover throws on an element that is not in a document, and the launcher would
  // then stay out of the top layer until the next render.
  document.body.appendChild(root);
  render();
  // Into the top layer at the next frame, before it is painted: showPopover updates the page's style at once,
  // which done here would make the script's own run a long task on a slow phone; in the frame it is the
  // style update the browser makes anyway to draw the launcher. (Any render before that, e.g. the page's
  // Caplo.open(), puts it there at once.)
  requestAnimationFrame(() => {
    drawn = true;
    render();
  });
  // Calls made before the script loaded: window.Caplo = window.Caplo || []; Caplo.push(["identify", token]).
  for (const call of queued) run(call);
  // data-open opens the chat on load on a desktop; on a phone it would take over the whole screen, so it does not.
  if ((data.open === "" || data.open === "true") && !phone()) open(false);
  // Otherwise the app is fetched when the browser is idle after the page's load event, so it costs the
  // page's first paint and load nothing and is usually there by the first click.
  if (document.readyState === "complete") whenIdle(makeAhead);
  else window.addEventListener("load", () => whenIdle(makeAhead), { once: true });
  window.dispatchEvent(new CustomEvent("caplo:ready"));
}

const current = document.currentScript;
if (current instanceof HTMLScriptElement) {
  if (document.body) start(current);
  else document.addEventListener("DOMContentLoaded", () => start(current));
}
