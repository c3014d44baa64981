// The visitor's message box: Enter sends, Shift+Enter starts a new line, at most 4000 characters
// (the inbound message limit), disabled while the connection is down.
import { useRef, useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { MESSAGE_MAX } from "../format.ts";
import { fill } from "../i18n.ts";

/** The counter appears this close to the limit. */
const COUNTER_FROM = MESSAGE_MAX - 500;

export function Composer({ inputRef }: { inputRef: { current: HTMLTextAreaElement | null } }) {
  const { t, say, connected } = useWidget();
  const [text, setText] = useState("");
  const composing = useRef(false);
  const trimmed = text.trim();
  const canSend = connected && trimmed.length > 0 && text.length <= MESSAGE_MAX;

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
        value={text}
        maxLength={MESSAGE_MAX}
        placeholder={t.inputPlaceholder}
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
        <span id="caplo-counter" class="counter" aria-live="polite">
          {text.length}/{MESSAGE_MAX}
          {text.length >= MESSAGE_MAX && <span class="sr-only"> {fill(t.tooLong, { max: MESSAGE_MAX })}</span>}
        </span>
      )}
      <button type="submit" class="primary send" disabled={!canSend}>
        {t.send}
      </button>
    </form>
  );
}
