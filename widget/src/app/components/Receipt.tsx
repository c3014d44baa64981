// A receipt: the display fields the presentation selected from a write's result, as label and value
// text. It never decides whether the write succeeded; the outcome state above it does.
import type { DisplayField } from "@caplo/shared";
import { useWidget } from "../context.ts";
import { clampText, fillLast4, last4 } from "../format.ts";
import type { Strings } from "../i18n.ts";

export function Receipt({ fields }: { fields: DisplayField[] }) {
  const { t } = useWidget();
  return (
    <dl class="receipt" aria-label={t.receipt}>
      {fields.map((f, i) => (
        <div class="field" key={i}>
          <dt>{clampText(f.label, 200)}</dt>
          <dd>{clampText(f.value)}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A `display: last4` value: only the final four characters, marked as such for screen readers. */
export function Masked({ value, t }: { value: string; t: Strings }) {
  const digits = last4(value);
  return (
    // Read as "ending in 4242": the words as text for screen readers (an aria-label on a span is not read by
    // all of them), the dots and digits for the eye.
    <span class="masked">
      <span aria-hidden="true">•••• {digits}</span>
      <span class="sr-only">{fillLast4(t.last4, digits)}</span>
    </span>
  );
}
