// The review card of a proposed write: the presentation's title and fields with their labels, last4
// fields masked, editable string fields as a text input or a select of the listed options, Confirm and
// Cancel. It can be used once; then it shows where the write stands: the latest outcome, updated in place.
import { useEffect, useRef, useState } from "preact/hooks";
import type { OutboundOf, ReviewField } from "@caplo/shared";
import { OPTION_VALUE_MAX } from "@caplo/shared/limits";
import type { ReviewView } from "../conversation.ts";
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";
import type { Strings } from "../i18n.ts";
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

/** A value as the visitor knows it: a select's option label rather than its raw value. */
const shownValue = (f: ReviewField, value: string) => f.options?.find((o) => o.value === value)?.label ?? value;

/** An editable field as the widget can edit it: a string shown whole (a last4 value is never prefilled). */
const isEditable = (f: ReviewField) => f.editable && f.display === "plain";

export function ReviewCard({ view, autoFocus }: { view: ReviewView; autoFocus: boolean }) {
  const { t, act, used, failed, connected } = useWidget();
  const { review } = view;
  const cardId = `review:${review.proposalId}`;
  const [values, setValues] = useState<Record<string, string>>({});
  const decided = useRef(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const choice = used[cardId];
  const open = view.state === "proposed" && choice === undefined;
  if (open) decided.current = false;

  useEffect(() => {
    // A new card takes the focus so keyboard and screen-reader users land on what needs a decision.
    if (autoFocus && open) heading.current?.focus();
  }, []);

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
  }

  const titleId = `${review.id}-title`;
  // Only where the write stands now: once a status check resolves a pending write, the card says "Done"
  // and the receipt, not also the earlier "not confirmed yet" (what the customer is told follows the
  // outcome). An outcome a later review state has overtaken (verify again, then running) is not shown.
  const latest = view.outcomes.at(-1);
  const current = latest?.state === view.state ? latest : undefined;
  const unsure = view.state === "pending" || view.state === "unknown";
  const shownState: State = open ? "proposed" : view.state === "proposed" ? "running" : view.state;
  return (
    <section class={`card review state-${shownState}`} aria-labelledby={titleId}>
      <h3 id={titleId} ref={heading} tabIndex={-1}>
        {clampText(review.title, 200)}
      </h3>
      {open && <p class="hint">{t.reviewHint}</p>}
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
                clampText(shownValue(f, values[f.path] ?? f.value))
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
          <button type="button" class="primary" disabled={!connected} onClick={() => decide("confirm")}>
            {t.confirm}
          </button>
          <button type="button" disabled={!connected} onClick={() => decide("decline")}>
            {t.cancel}
          </button>
        </div>
      ) : (
        <div class="status" role="status">
          <p class="state">
            <strong>
              {view.state === "proposed" ? (choice === "decline" ? t.declining : t.confirming) : stateLabel(t, view.state)}
            </strong>
          </p>
          {current && (
            <div class={`outcome outcome-${current.state}`} key={current.id}>
              {current.message && <p>{clampText(current.message, 1000)}</p>}
              {current.receipt && current.receipt.length > 0 && <Receipt fields={current.receipt} />}
            </div>
          )}
          {unsure && <p class="warn">{t.dontRepeat}</p>}
        </div>
      )}
    </section>
  );
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
  return (
    <input
      id={id}
      type="text"
      value={value}
      maxLength={OPTION_VALUE_MAX}
      title={hint}
      onInput={(e) => onInput((e.currentTarget as HTMLInputElement).value)}
    />
  );
}

/** An outcome whose card is not in the conversation (for example history trimmed). */
export function OutcomeNotice({ outcome }: { outcome: OutboundOf<"outcome"> }) {
  const { t } = useWidget();
  const unsure = outcome.state === "pending" || outcome.state === "unknown";
  return (
    <section class={`card outcome outcome-${outcome.state}`} role="status">
      <p class="state">
        <strong>{stateLabel(t, outcome.state)}</strong>
      </p>
      {outcome.message && <p>{clampText(outcome.message, 1000)}</p>}
      {outcome.receipt && outcome.receipt.length > 0 && <Receipt fields={outcome.receipt} />}
      {unsure && <p class="warn">{t.dontRepeat}</p>}
    </section>
  );
}
