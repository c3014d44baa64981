// The step-up prompt: the customer must verify (or verify again, at a level, maybe recently). The widget
// cannot verify anyone itself; its button asks the host page, which signs the customer in and calls
// identify; once the server has accepted that identity, the prompt says so instead of still asking. A
// visitor who was never verified is asked to sign in, not to verify "again"; only the latest prompt asks.
import type { OutboundOf } from "@caplo/shared";
import { useState } from "preact/hooks";
import { useWidget } from "../context.ts";

export function StepUp({ prompt }: { prompt: OutboundOf<"step_up"> }) {
  const { t, requestStepUp, verifications, verified, latestStepUp } = useWidget();
  // The verification count when the prompt was shown: a higher count means the server verified the visitor
  // since, whether through this button or the page's own sign-in (the prompt then no longer asks).
  const [shownAt] = useState(verifications);
  const [asked, setAsked] = useState(false);
  const active = latestStepUp === prompt.id;
  // "Again" only for a visitor verified when the prompt came (an older prompt in the history reads plainly).
  const [again] = useState(verified && active);
  const done = verifications > shownAt;
  const titleId = `${prompt.id}-title`;
  return (
    <section class={`card step-up${done ? " step-up-done" : ""}`} aria-labelledby={titleId}>
      <h3 id={titleId}>{again ? t.stepUpTitle : t.stepUpFirstTitle}</h3>
      <p>{again ? t.stepUpAgainText : t.stepUpFirstText}</p>
      {done ? (
        <p class="ok">{t.stepUpDone}</p>
      ) : !active ? (
        latestStepUp !== null && <p class="muted">{t.stepUpReplaced}</p>
      ) : asked ? (
        <p class="muted">{t.stepUpRequested}</p>
      ) : (
        <button
          type="button"
          class="primary"
          onClick={() => {
            requestStepUp(prompt.level, prompt.maxAuthAgeSeconds);
            setAsked(true);
          }}
        >
          {again ? t.stepUpButton : t.signInButton}
        </button>
      )}
    </section>
  );
}
