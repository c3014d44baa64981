// The app's half of the host page API: messages go only to the host page's origin, and only messages
// from the parent window at that origin are accepted. The loader checks the other direction.

/** Every message of the API carries this marker so unrelated postMessage traffic is ignored. */
export const MARK = "caplo";

export type HostCommand =
  | { type: "identify"; token: string }
  /** The panel opened; `focus` is false when the page opened it on load (the app must not take the focus). */
  | { type: "open"; focus: boolean }
  | { type: "close" }
  /** The loader's answer to ready: the resume token it keeps in the host page's own storage, if any. */
  | { type: "init"; resume: string | null }
  /** The visitor points at the launcher: open the socket now (no hello, so no conversation, until init). */
  | { type: "warm" };
export type AppNotice =
  | { type: "ready" }
  /** Keep this resume token in the host page's storage (an iframe's own storage is often blocked). */
  | { type: "persist"; resume: string }
  | { type: "close" }
  | { type: "activity" }
  | { type: "step_up"; level: string; maxAuthAgeSeconds?: number };

/** Identity tokens are capped as the identify frame caps them. */
const TOKEN_MAX = 8192;

/** The host command in a message event, if it is one and comes from the expected parent and origin. */
export function readHostCommand(event: MessageEvent, parent: Window | null, parentOrigin: string | null): HostCommand | null {
  if (!parentOrigin || event.origin !== parentOrigin || event.source !== parent) return null;
  const data: unknown = event.data;
  if (typeof data !== "object" || data === null) return null;
  const { [MARK]: mark, type, token, resume, focus } = data as Record<string, unknown>;
  if (mark !== 1) return null;
  if (type === "identify") return typeof token === "string" && token.length > 0 && token.length <= TOKEN_MAX ? { type, token } : null;
  if (type === "open") return { type, focus: focus !== false };
  if (type === "close" || type === "warm") return { type };
  if (type === "init") return { type, resume: typeof resume === "string" && resume.length <= 512 ? resume : null };
  return null;
}

export function notifyHost(notice: AppNotice, parent: Window | null, parentOrigin: string | null): void {
  if (!parent || !parentOrigin || parent === window) return;
  parent.postMessage({ [MARK]: 1, ...notice }, parentOrigin);
}
