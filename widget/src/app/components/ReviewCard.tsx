// The review card of a proposed write: the presentation's title and fields with their labels, last4
// fields masked, editable string fields as a text input or a select of the listed options, Confirm and
// Cancel. It can be used once; then it shows where the write stands: the latest outcome, updated in place.
import { useEffect, useRef, useState } from "preact/hooks";
import type { OutboundOf, ReviewField } from "@caplo/shared";
import { OPTION_VALUE_MAX } from "@caplo/shared/limits";
import type { ReviewView } from "../conversation.ts";
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";
import { fill, type Strings } from "../i18n.ts";
import { Masked, Receipt } from "./Receipt.tsx";

type State = OutboundOf<"review">["state"];

export function stateLabel(t: Strings, state: State): string {
  const labels: Record<State, string> = {
    proposed: t.stateProposed,
    running: t.stateRunning,
    applied: t.stateApplied,
    not_applied: t.stateNotApplied,
    pending: t.statePending,
    unknown: t.stateUnknown,
    declined: t.stateDeclined,
    cancelled: t.stateCancelled,
    expired: t.stateExpired,
    step_up_required: t.stateStepUp,
  };
  return labels[state] ?? state;
}

/**
 * A value as the visitor knows it: a select's option label, or the name of the item they were shown with
 * that id in a result ("Sat 5 Dec, 15:00, fitting" for a slot id), rather than the raw value.
 */
export const shownValue = (f: ReviewField, value: string, names: Record<string, string>) =>
  f.options?.find((o) => o.value === value)?.label ?? names[`${f.path.slice(1)}\u0000${value}`] ?? value;

/** An editable field as the widget can edit it: a string shown whole (a last4 value is never prefilled). */
const isEditable = (f: ReviewField) => f.editable && f.display === "plain";

export function ReviewCard({ view, autoFocus }: { view: ReviewView; autoFocus: boolean }) {
  const { t, act, used, failed, connected, names } = useWidget();
  const { review } = view;
  const cardId = `review:${review.proposalId}`;
  const [values, setValues] = useState<Record<string, string>>({});
  const decided = useRef(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const choice = used[cardId];
  const open = view.state === "proposed" && choice === undefined;
  if (open) decided.current = false;

  const status = useRef<HTMLDivElement>(null);
  /** The visitor decided on this card in this page: the outcome takes the focus when it arrives. */
  const decidedHere = useRef(false);

  useEffect(() => {
    // A new card takes the focus so keyboard and screen-reader users land on what needs a decision.
    if (autoFocus && open) heading.current?.focus();
  }, []);
  useEffect(() => {
    // After Confirm or Don't do it, the focus goes to what happened (not to the page's body, as the buttons go
    // away): once, when the first answer comes; a later change (a status check) does not pull the focus back.
    if (decidedHere.current && !open && view.state !== "proposed") {
      decidedHere.current = false;
      status.current?.focus();
    }
  }, [open, view.state]);

  function decide(kind: "confirm" | "decline") {
    // The ref flips before any re-render, so a double click sends one confirm.
    if (decided.current || !open) return;
    decided.current = true;
    const edits: Record<string, string> = {};
    for (const f of review.fields) {
      const v = values[f.path];
      if (isEditable(f) && v !== undefined && v !== f.value) edits[f.path] = v;
    }
    const sent =
      kind === "confirm"
        ? act(cardId, "confirm", {
            type: "confirm",
            proposalId: review.proposalId,
            ...(Object.keys(edits).length ? { edits } : {}),
          })
        : act(cardId, "decline", { type: "decline", proposalId: review.proposalId });
    if (!sent) decided.current = false;
    else decidedHere.current = true;
  }

  const titleId = `${review.id}-title`;
  const hintId = `${review.id}-hint`;
  const title = clampText(review.title, 200);
  // Only where the write stands now: once a status check resolves a pending write, the card says "Done"
  // and the receipt, not also the earlier "not confirmed yet" (what the customer is told follows the
  // outcome). An outcome a later review state has overtaken (verify again, then running) is not shown.
  const latest = view.outcomes.at(-1);
  const current = latest?.state === view.state ? latest : undefined;
  const shownState: State = open ? "proposed" : view.state === "proposed" ? "running" : view.state;
  return (
    <section class={`card review state-${shownState}`} aria-labelledby={titleId} id={`card-${review.proposalId}`}>
      <h3 id={titleId} ref={heading} tabIndex={-1}>
        {title}
      </h3>
      {open && (
        <p class="hint" id={hintId}>
          {t.reviewHint}
        </p>
      )}
      <dl class="fields">
        {review.fields.map((f) => (
          <div class="field" key={f.path}>
            <dt>
              <label for={open && isEditable(f) ? `${review.id}${f.path}` : undefined}>{clampText(f.label, 200)}</label>
            </dt>
            <dd>
              {open && isEditable(f) ? (
                <FieldInput
                  id={`${review.id}${f.path}`}
                  field={f}
                  value={values[f.path] ?? f.value}
                  onInput={(v) => setValues((prev) => ({ ...prev, [f.path]: v }))}
                  hint={t.editable}
                />
              ) : f.display === "last4" ? (
                <Masked value={f.value} t={t} />
              ) : (values[f.path] ?? f.value) === "" ? (
                // An optional field left empty (no reason given) reads as "none", not as a missing line.
                <span class="muted">{t.noValue}</span>
              ) : (
                // Whole, never cut with an ellipsis, its line breaks kept: what runs is the whole value.
                <span class="value">{shownValue(f, values[f.path] ?? f.value, names)}</span>
              )}
            </dd>
          </div>
        ))}
      </dl>
      {failed[cardId] && open && (
        <p class="error" role="alert">
          {clampText(failed[cardId]!, 300)}
        </p>
      )}
      {open ? (
        <div class="actions">
          <button type="button" class="primary" disabled={!connected} aria-describedby={hintId} onClick={() => decide("confirm")}>
            {t.confirm}
          </button>
          <button type="button" disabled={!connected} aria-describedby={hintId} onClick={() => decide("decline")}>
            {t.cancel}
          </button>
        </div>
      ) : (
        <div class="status" ref={status} tabIndex={-1}>
          <Outcome view={view} pendingChoice={view.state === "proposed" ? choice : undefined} outcome={current} />
        </div>
      )}
    </section>
  );
}

/** One line per state, said once: the state, then what it means (the reason, "nothing was changed", the receipt). */
function Outcome({ view, pendingChoice, outcome }: { view: ReviewView; pendingChoice: string | undefined; outcome: OutboundOf<"outcome"> | undefined }) {
  const { t } = useWidget();
  const state = view.state;
  const label = state === "proposed" ? (pendingChoice === "decline" ? t.declining : t.confirming) : stateLabel(t, state);
  const line = stateLine(t, state, outcome);
  return (
    <>
      <p class="state">
        <strong>{label}</strong>
      </p>
      {line && <p class={state === "pending" || state === "unknown" ? "warn" : undefined}>{line}</p>}
      {outcome?.receipt && outcome.receipt.length > 0 && <Receipt fields={outcome.receipt} />}
    </>
  );
}

/** What a state means for the visitor, in their language; the tool's reason for a write that did not go through. */
export function stateLine(t: Strings, state: State, outcome: OutboundOf<"outcome"> | undefined): string {
  switch (state) {
    case "not_applied":
      return outcome ? clampText(outcome.message, 1000) : "";
    case "pending":
    case "unknown":
      return t.dontRepeat;
    case "declined":
      return t.declinedText;
    case "cancelled":
      return t.cancelledText;
    case "expired":
      return outcome && /verif/i.test(outcome.message) ? t.expiredStepUpText : t.expiredText;
    case "step_up_required":
      return t.stepUpWaitText;
    default:
      return "";
  }
}

function FieldInput(props: {
  id: string;
  field: ReviewField;
  value: string;
  onInput: (value: string) => void;
  hint: string;
}) {
  const { id, field, value, onInput, hint } = props;
  if (field.input === "select" && field.options && field.options.length > 0) {
    const known = field.options.some((o) => o.value === value);
    return (
      <select id={id} value={value} title={hint} onChange={(e) => onInput((e.currentTarget as HTMLSelectElement).value)}>
        {!known && <option value={value}>{clampText(value, 200)}</option>}
        {field.options.map((o) => (
          <option value={o.value} key={o.value}>
            {clampText(o.label, 200)}
          </option>
        ))}
      </select>
    );
  }
  // A text area as tall as the value, not a one-line input: an input shows only what fits its width (and
  // drops line breaks), so the rest of a long proposed value would run unseen. Enter does not add a line.
  return (
    <textarea
      id={id}
      value={value}
      rows={rowsFor(value)}
      maxLength={OPTION_VALUE_MAX}
      title={hint}
      onKeyDown={(e) => {
        if (e.key === "Enter") e.preventDefault();
      }}
      onInput={(e) => onInput((e.currentTarget as HTMLTextAreaElement).value)}
    />
  );
}

/** Characters a line of an editable field holds at the narrowest card (fewer is safe: a spare line). */
const FIELD_LINE_CHARS = 20;

/** Lines enough to show the whole value: each of its lines wrapped at FIELD_LINE_CHARS. */
export function rowsFor(value: string): number {
  return value.split("\n").reduce((rows, line) => rows + Math.max(1, Math.ceil(Array.from(line).length / FIELD_LINE_CHARS)), 0);
}

/** An outcome whose card is not in the conversation (for example history trimmed). */
export function OutcomeNotice({ outcome }: { outcome: OutboundOf<"outcome"> }) {
  const { t } = useWidget();
  const line = stateLine(t, outcome.state, outcome);
  // A write with no card (confirmation none) is named here, or "Done" would not say what was done.
  const title = outcome.title ? clampText(outcome.title, 200) : undefined;
  return (
    <section class={`card outcome outcome-${outcome.state}`} aria-label={title ? `${title}: ${stateLabel(t, outcome.state)}` : stateLabel(t, outcome.state)}>
      {title && <p class="update-title">{title}</p>}
      <p class="state">
        <strong>{stateLabel(t, outcome.state)}</strong>
      </p>
      {line && <p>{line}</p>}
      {outcome.receipt && outcome.receipt.length > 0 && <Receipt fields={outcome.receipt} />}
    </section>
  );
}

/**
 * A write the visitor was left waiting on (pending, unknown, verify again) has resolved: said where the
 * conversation is now, since its card may be far above; a button takes the visitor to the card.
 */
export function OutcomeUpdate({ view, outcome }: { view: ReviewView; outcome: OutboundOf<"outcome"> }) {
  const { t } = useWidget();
  const line = stateLine(t, outcome.state, outcome);
  const title = fill(t.updateTitle, { title: clampText(view.review.title, 200) });
  return (
    <section class={`card update outcome-${outcome.state}`} aria-label={title}>
      <p class="update-title">{title}</p>
      <p class="state">
        <strong>{stateLabel(t, outcome.state)}</strong>
      </p>
      {line && <p>{line}</p>}
      <button
        type="button"
        class="link"
        onClick={() => {
          const card = document.getElementById(`card-${view.review.proposalId}`);
          card?.scrollIntoView({ block: "start" });
          card?.querySelector<HTMLElement>(".status")?.focus();
        }}
      >
        {t.showCard}
      </button>
    </section>
  );
}
