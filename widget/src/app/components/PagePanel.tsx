// A page opened over the chat: a sandboxed iframe of a safe URL from one of the result's origins. It
// accepts messages only from that frame at those origins, and only to close itself; what the page did
// is never taken as an outcome (the visitor's "done" goes to the agent, which checks with a read tool).
import { useEffect, useRef } from "preact/hooks";
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";

export interface OpenPage {
  url: string;
  origins: string[];
  title: string;
}

/** Messages a page may post: close the panel, or close it and tell the agent the visitor is done. */
export function readPageMessage(event: MessageEvent, frame: Window | null | undefined, origins: string[]): "close" | "done" | null {
  if (!frame || event.source !== frame || !origins.includes(event.origin)) return null;
  const data: unknown = event.data;
  if (typeof data !== "object" || data === null) return null;
  const type = (data as Record<string, unknown>).type;
  return type === "caplo:close" ? "close" : type === "caplo:done" ? "done" : null;
}

export function PagePanel({ page, onClose }: { page: OpenPage; onClose: (done: boolean) => void }) {
  const { t } = useWidget();
  const frame = useRef<HTMLIFrameElement>(null);
  const closeButton = useRef<HTMLButtonElement>(null);
  // A page on the widget's own origin must not get allow-same-origin, or it could lift its own sandbox.
  const sameOrigin = new URL(page.url).origin === location.origin;
  useEffect(() => {
    closeButton.current?.focus();
    const onMessage = (event: MessageEvent) => {
      const what = readPageMessage(event, frame.current?.contentWindow, page.origins);
      if (what) onClose(what === "done");
    };
    window.addEventListener("message", onMessage);
    return () => window.removeEventListener("message", onMessage);
  }, [page]);
  return (
    <div class="page-panel" role="dialog" aria-modal="true" aria-labelledby="caplo-page-title">
      <div class="page-bar">
        <h2 id="caplo-page-title">{clampText(page.title, 80)}</h2>
        <button type="button" ref={closeButton} class="icon" aria-label={t.closePage} onClick={() => onClose(false)}>
          ×
        </button>
      </div>
      <iframe
        ref={frame}
        src={page.url}
        title={clampText(page.title, 80)}
        sandbox={`allow-scripts allow-forms allow-popups${sameOrigin ? "" : " allow-same-origin"}`}
        referrerpolicy="no-referrer"
      />
    </div>
  );
}
