// The visitor's message box: Enter sends, Shift+Enter starts a new line, it grows with the text up to a
// few lines, and it says how many characters are left near the 4000-character limit (the inbound message
// limit). A longer paste is kept whole and not sent until it is short enough, instead of being cut
// silently. While the agent writes its reply, Send becomes Stop.
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { MESSAGE_MAX } from "../format.ts";
import { fill } from "../i18n.ts";

/** The counter appears this close to the limit. */
const COUNTER_FROM = MESSAGE_MAX - 500;

export function Composer({ inputRef, streaming, onStop }: { inputRef: { current: HTMLTextAreaElement | null }; streaming: boolean; onStop: () => void }) {
  const { t, say, connected } = useWidget();
  const [text, setText] = useState("");
  const composing = useRef(false);
  const trimmed = text.trim();
  const over = text.length > MESSAGE_MAX;
  const canSend = connected && trimmed.length > 0 && !over;

  useLayoutEffect(() => {
    // Grow with the text (CSS caps the height; beyond it the box scrolls).
    const el = inputRef.current;
    if (!el) return;
    // Empty, the box is one line (its CSS min-height): no measuring, which would lay the whole app out
    // synchronously during its first render.
    if (!text) {
      el.style.height = "";
      return;
    }
    el.style.height = "auto";
    el.style.height = `${el.scrollHeight + 2}px`;
  }, [text]);

  function send() {
    if (!canSend) return;
    if (say(trimmed)) setText("");
  }

  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <label for="caplo-input" class="sr-only">
        {t.inputLabel}
      </label>
      <textarea
        id="caplo-input"
        ref={inputRef}
        rows={1}
        dir="auto"
        value={text}
        placeholder={t.inputPlaceholder}
        aria-invalid={over || undefined}
        aria-describedby={text.length > COUNTER_FROM ? "caplo-counter" : undefined}
        onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
        onCompositionStart={() => (composing.current = true)}
        onCompositionEnd={() => (composing.current = false)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !composing.current) {
            e.preventDefault();
            send();
          }
        }}
      />
      {text.length > COUNTER_FROM && (
        <span id="caplo-counter" class={`counter${over ? " over" : ""}`} aria-live="polite">
          {over ? fill(t.tooLongBy, { max: MESSAGE_MAX, count: text.length }) : fill(t.charsLeft, { count: MESSAGE_MAX - text.length })}
        </span>
      )}
      {streaming ? (
        <button type="button" class="send stop" aria-label={t.stopLabel} onClick={onStop}>
          <svg viewBox="0 0 24 24" width="14" height="14" aria-hidden="true"><rect x="5" y="5" width="14" height="14" rx="2" fill="currentColor" /></svg>
          {t.stop}
        </button>
      ) : (
        <button type="submit" class="primary send" disabled={!canSend}>
          {t.send}
        </button>
      )}
    </form>
  );
}
