// The step-up prompt: the customer must verify (or verify again, at a level, maybe recently). The widget
// cannot verify anyone itself; its button asks the host page, which signs the customer in and calls
// identify; once the server has accepted that identity, the prompt says so instead of still asking. A
// visitor who was never verified is asked to sign in, not to verify "again"; only the latest prompt still
// asking has the button (App's latestStepUp), an older one still asking says a newer one is below. A
// write's prompt follows its write: it asks while the write waits for the customer to verify, and is done
// once the write went on (a verification at too low a level leaves it asking, with its button again).
import type { OutboundOf } from "@caplo/shared";
import { useEffect, useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import type { Strings } from "../i18n.ts";

/** The used-map key under which a prompt's wording is kept ("again" or "first"), so a reload and the transcript say the same. */
export const stepUpKey = (id: string) => `stepup:${id}`;

/** The words a step-up prompt shows: sign in (a visitor not verified when it came) or verify again. */
export function stepUpWords(t: Strings, again: boolean): { title: string; text: string } {
  return again ? { title: t.stepUpTitle, text: t.stepUpAgainText } : { title: t.stepUpFirstTitle, text: t.stepUpFirstText };
}

/** Write states after step_up_required in which the write went on (it ran once the customer verified). */
const WENT_ON: ReadonlySet<string> = new Set(["running", "applied", "not_applied", "pending", "unknown"]);

export function StepUp({ prompt }: { prompt: OutboundOf<"step_up"> }) {
  const { t, requestStepUp, verifications, verified, latestStepUp, writeStates, used, keep } = useWidget();
  // The verification count when the prompt was shown: a higher count means the server verified the visitor
  // since, whether through this button or the page's own sign-in (a read's prompt then no longer asks).
  const [shownAt] = useState(verifications);
  // The verification count when the button was pressed: "follow the steps" until a verification comes.
  const [askedAt, setAskedAt] = useState<number | null>(null);
  const active = latestStepUp === prompt.id;
  const recorded = used[stepUpKey(prompt.id)];
  // "Again" only for a visitor verified when the prompt came (an older prompt in the history reads plainly);
  // what it said first is kept, so it reads the same after a reload.
  const [again] = useState(recorded !== undefined ? recorded === "again" : verified && active);
  useEffect(() => {
    if (recorded === undefined) keep(stepUpKey(prompt.id), again ? "again" : "first");
  }, []);
  const writeState = prompt.proposalId ? writeStates[prompt.proposalId] : undefined;
  const done = prompt.proposalId ? writeState !== undefined && WENT_ON.has(writeState) : verifications > shownAt;
  const words = stepUpWords(t, again);
  const titleId = `${prompt.id}-title`;
  return (
    <section class={`card step-up${done ? " step-up-done" : ""}`} aria-labelledby={titleId}>
      <h3 id={titleId}>{words.title}</h3>
      <p>{words.text}</p>
      {done ? (
        <p class="ok">{t.stepUpDone}</p>
      ) : !active ? (
        latestStepUp !== null && <p class="muted">{t.stepUpReplaced}</p>
      ) : askedAt === verifications ? (
        <p class="muted">{t.stepUpRequested}</p>
      ) : (
        <button
          type="button"
          class="primary"
          onClick={() => {
            requestStepUp(prompt.level, prompt.maxAuthAgeSeconds);
            setAskedAt(verifications);
          }}
        >
          {again ? t.stepUpButton : t.signInButton}
        </button>
      )}
    </section>
  );
}
