// The step-up prompt: the customer must verify again (at a level, maybe recently). The widget cannot
// verify anyone itself; its button asks the host page, which signs the customer in and calls identify;
// once that identity is accepted, the prompt says so instead of still asking.
import type { OutboundOf } from "@caplo/shared";
import { useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";

export function StepUp({ prompt }: { prompt: OutboundOf<"step_up"> }) {
  const { t, requestStepUp, verifications } = useWidget();
  // The verification count when the button asked the page; a higher count means the page verified since.
  const [askedAt, setAskedAt] = useState<number | null>(null);
  const asked = askedAt !== null;
  const done = asked && verifications > askedAt;
  return (
    <section class={`card step-up${done ? " step-up-done" : ""}`} aria-labelledby={`${prompt.id}-title`}>
      <h3 id={`${prompt.id}-title`}>{t.stepUpTitle}</h3>
      <p>{clampText(prompt.text, 1000)}</p>
      {done ? (
        <p class="ok" role="status">
          {t.stepUpDone}
        </p>
      ) : asked ? (
        <p class="muted" role="status">
          {t.stepUpRequested}
        </p>
      ) : (
        <button
          type="button"
          class="primary"
          onClick={() => {
            requestStepUp(prompt.level, prompt.maxAuthAgeSeconds);
            setAskedAt(verifications);
          }}
        >
          {t.stepUpButton}
        </button>
      )}
    </section>
  );
}
