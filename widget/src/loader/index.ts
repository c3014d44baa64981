// The script-tag loader: `<script src="https://HOST/widget.js" data-agent="NAME" async></script>`.
// It draws the launcher in a shadow root (so the host page's CSS cannot reach it), creates the
// app's iframe from the same host on first open, and offers window.Caplo (open, close, toggle,
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
}
type Queued = [string, ...unknown[]];

const LABELS: Record<string, [open: string, close: string, title: string]> = {
  en: ["Open chat", "Close chat", "Chat"],
  sl: ["Odpri klepet", "Zapri klepet", "Klepet"],
  de: ["Chat öffnen", "Chat schließen", "Chat"],
};
const COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const AGENT = /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;
const LOCALE = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
const TOKEN_MAX = 8192;
const ICON =
  '<svg viewBox="0 0 24 24" width="28" height="28" aria-hidden="true"><path fill="currentColor" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';
const CLOSE_ICON =
  '<svg viewBox="0 0 24 24" width="26" height="26" aria-hidden="true"><path fill="none" stroke="currentColor" stroke-width="2.5" stroke-linecap="round" d="M6 6l12 12M18 6L6 18"/></svg>';

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
  const locale = LOCALE.test(data.locale ?? "") ? data.locale! : navigator.language || "en";
  const labels = LABELS[locale.slice(0, 2).toLowerCase()] ?? LABELS.en!;

  const root = document.createElement("div");
  root.setAttribute("data-caplo", "");
  const shadow = root.attachShadow({ mode: "open" });
  const side = left ? "left" : "right";
  shadow.innerHTML =
    `<style>` +
    `:host{all:initial}` +
    `button{position:fixed;bottom:20px;${side}:20px;z-index:2147483000;width:60px;height:60px;border-radius:50%;border:0;` +
    `background:${color};color:#fff;cursor:pointer;display:grid;place-items:center;box-shadow:0 4px 16px rgba(0,0,0,.25);transition:transform .15s}` +
    `button:hover{transform:scale(1.05)}button:focus-visible{outline:3px solid ${color};outline-offset:3px}` +
    `i{position:absolute;top:4px;right:4px;width:12px;height:12px;border-radius:50%;background:#e5484d;border:2px solid #fff;display:none}` +
    `.unread i{display:block}` +
    `div{position:fixed;bottom:92px;${side}:20px;z-index:2147483000;width:min(400px,calc(100vw - 40px));` +
    `height:min(640px,calc(100vh - 112px));border-radius:14px;overflow:hidden;box-shadow:0 8px 32px rgba(0,0,0,.3);` +
    `display:none;background:#fff;transition:opacity .15s,transform .15s}` +
    `.open div{display:block}` +
    `iframe{border:0;width:100%;height:100%;display:block}` +
    `@media (max-width:480px){div{inset:0;width:100%;height:100%;border-radius:0}.open button{display:none}}` +
    `@media (prefers-reduced-motion:reduce){button,div{transition:none}}` +
    `</style><section><button type="button" aria-expanded="false" aria-controls="p"><i></i></button><div id="p" role="dialog"></div></section>`;
  const wrap = shadow.querySelector("section")!;
  const launcher = shadow.querySelector("button")!;
  const panel = shadow.querySelector("div")!;
  panel.setAttribute("aria-label", labels[2]);

  let frame: HTMLIFrameElement | null = null;
  let ready = false;
  let isOpen = false;
  let token: string | null = null;
  /** Whether the last open was the visitor's (keyboard goes into the app) or the page's on load (it does not). */
  let focusApp = true;
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
  const post = (message: Record<string, unknown>) => {
    // targetOrigin is HOST: the message is dropped if the frame navigated anywhere else.
    if (frame?.contentWindow && ready) frame.contentWindow.postMessage({ caplo: 1, ...message }, host);
  };
  const flush = () => {
    if (token) {
      post({ type: "identify", token });
      token = null; // the token is handed over once and not kept here
    }
    if (isOpen) post({ type: "open", focus: focusApp });
  };
  const render = () => {
    wrap.className = isOpen ? "open" : "";
    launcher.setAttribute("aria-expanded", String(isOpen));
    launcher.setAttribute("aria-label", isOpen ? labels[1] : labels[0]);
    launcher.innerHTML = `<i></i>${isOpen ? CLOSE_ICON : ICON}`;
  };

  /** Opens the panel; `focus` moves the keyboard into it (not when the page opens it on load). */
  function open(focus = true): void {
    if (isOpen) return;
    isOpen = true;
    focusApp = focus;
    if (!frame) {
      frame = document.createElement("iframe");
      const q = new URLSearchParams({ agent, locale, color, origin: location.origin });
      frame.src = `${host}/widget/app.html?${q}`;
      frame.title = labels[2];
      frame.setAttribute("allow", "clipboard-write");
      panel.appendChild(frame);
    }
    render();
    if (focus) frame.focus();
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
      post({ type: "init", resume: read(resumeKey) });
      flush();
    } else if (message.type === "persist" && typeof message.resume === "string" && message.resume.length <= 512) {
      write(resumeKey, message.resume);
    } else if (message.type === "close") close();
    else if (message.type === "activity" && !isOpen) wrap.classList.add("unread");
    else if (message.type === "step_up") {
      const detail = { level: String(message.level), maxAuthAgeSeconds: message.maxAuthAgeSeconds };
      emit("step_up", detail);
      window.dispatchEvent(new CustomEvent("caplo:step-up", { detail }));
    }
  });
  launcher.addEventListener("click", () => (isOpen ? close() : open()));
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
      token = value;
      flush();
    },
    on(event, handler) {
      if (typeof handler === "function") (handlers[event] ??= []).push(handler);
    },
  };
  w.Caplo = api;
  render();
  document.body.appendChild(root);
  // Calls made before the script loaded: window.Caplo = window.Caplo || []; Caplo.push(["identify", token]).
  for (const [name, ...args] of queued) {
    const fn = (api as unknown as Record<string, unknown>)[name];
    if (typeof fn === "function") (fn as (...a: unknown[]) => void).apply(api, args);
  }
  if (data.open === "" || data.open === "true") open(false);
  window.dispatchEvent(new CustomEvent("caplo:ready"));
}

const current = document.currentScript;
if (current instanceof HTMLScriptElement) {
  if (document.body) start(current);
  else document.addEventListener("DOMContentLoaded", () => start(current));
}
