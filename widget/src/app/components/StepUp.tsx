// The step-up prompt: the customer must verify again (at a level, maybe recently). The widget cannot
// verify anyone itself; its button asks the host page, which signs the customer in and calls identify.
import type { OutboundOf } from "@caplo/shared";
import { useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";

export function StepUp({ prompt }: { prompt: OutboundOf<"step_up"> }) {
  const { t, requestStepUp } = useWidget();
  const [asked, setAsked] = useState(false);
  return (
    <section class="card step-up" aria-labelledby={`${prompt.id}-title`}>
      <h3 id={`${prompt.id}-title`}>{t.stepUpTitle}</h3>
      <p>{clampText(prompt.text, 1000)}</p>
      {asked ? (
        <p class="muted" role="status">
          {t.stepUpRequested}
        </p>
      ) : (
        <button
          type="button"
          class="primary"
          onClick={() => {
            requestStepUp(prompt.level, prompt.maxAuthAgeSeconds);
            setAsked(true);
          }}
        >
          {t.stepUpButton}
        </button>
      )}
    </section>
  );
}
