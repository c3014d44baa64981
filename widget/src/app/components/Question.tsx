// Elicitation: a tool asks the visitor for missing details. `form` style shows the requested fields as
// a form, validated before it is sent; `questions` style shows one question as tappable choices. Either
// can be answered once, or skipped (decline).
import type { OutboundOf } from "@caplo/shared";
import { ELICITATION_FIELDS_MAX, QUESTION_OPTIONS_MAX } from "@caplo/shared/limits";
import { useRef, useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { clampText } from "../format.ts";
import { fill, type Strings } from "../i18n.ts";

type QuestionMessage = OutboundOf<"question">;
type Field = QuestionMessage["fields"][number];
type Value = string | number | boolean;

export function Question({ question }: { question: QuestionMessage }) {
  return question.style === "questions" ? <Choices question={question} /> : <Form question={question} />;
}

function useAnswer(question: QuestionMessage) {
  const { act, used } = useWidget();
  const id = `question:${question.elicitationId}`;
  const once = useRef(false);
  const answer = (action: "accept" | "decline", content?: Record<string, Value>, value = action): boolean => {
    if (once.current || used[id] !== undefined) return false;
    once.current = true;
    const sent = act(id, value, { type: "answer", elicitationId: question.elicitationId, action, ...(content ? { content } : {}) });
    if (!sent) once.current = false;
    return sent;
  };
  return { answered: used[id], answer };
}

function Choices({ question }: { question: QuestionMessage }) {
  const { t, connected } = useWidget();
  const { answered, answer } = useAnswer(question);
  const field = question.fields[0];
  const options = (field?.options ?? []).slice(0, QUESTION_OPTIONS_MAX);
  const labelId = `${question.id}-q`;
  if (!field) return null;
  return (
    <section class="card question" aria-labelledby={labelId}>
      <p id={labelId} class="question-text">
        {clampText(question.message, 1000)}
      </p>
      <div class="choices" role="group" aria-labelledby={labelId}>
        {options.map((o) => (
          <button
            type="button"
            key={o.value}
            class={answered === `accept:${o.value}` ? "chosen" : undefined}
            aria-pressed={answered !== undefined ? answered === `accept:${o.value}` : undefined}
            disabled={answered !== undefined || !connected}
            onClick={() => answer("accept", { [field.name]: o.value }, `accept:${o.value}` as "accept")}
          >
            {clampText(o.label, 40)}
          </button>
        ))}
      </div>
      {answered === undefined && (
        <button type="button" class="link" disabled={!connected} onClick={() => answer("decline")}>
          {t.decline}
        </button>
      )}
    </section>
  );
}

/** The error for one value of a form field, or null when it is valid. */
export function validateField(field: Field, raw: Value | undefined, t: Strings): string | null {
  const empty = raw === undefined || raw === "";
  if (empty) return field.required && field.kind !== "boolean" ? t.required : null;
  if (field.kind === "number" || field.kind === "integer") {
    const n = typeof raw === "number" ? raw : Number(String(raw).trim().replace(",", "."));
    if (!Number.isFinite(n)) return t.fieldNumber;
    if (field.kind === "integer" && !Number.isInteger(n)) return t.fieldInteger;
    if (field.minimum !== undefined && n < field.minimum) return fill(t.fieldMin, { n: field.minimum });
    if (field.maximum !== undefined && n > field.maximum) return fill(t.fieldMax, { n: field.maximum });
    return null;
  }
  if (field.kind === "choice") {
    return field.options?.some((o) => o.value === raw) ? null : t.required;
  }
  if (field.kind === "string") {
    const s = String(raw);
    if (field.minLength !== undefined && s.length < field.minLength) return fill(t.fieldTooShort, { n: field.minLength });
    if (field.maxLength !== undefined && s.length > field.maxLength) return fill(t.fieldTooLong, { n: field.maxLength });
    if (field.format === "email" && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s)) return t.fieldEmail;
    if ((field.format === "uri" || field.format === "url") && !/^https:\/\/\S+$/.test(s)) return t.fieldUrl;
    if (field.format === "date" && !/^\d{4}-\d{2}-\d{2}$/.test(s)) return t.fieldDate;
  }
  return null;
}

/** The typed value a field's input holds, as the answer sends it. */
function typed(field: Field, raw: Value): Value {
  if (field.kind === "number" || field.kind === "integer") return Number(String(raw).trim().replace(",", "."));
  return raw;
}

function inputType(field: Field): string {
  if (field.format === "email") return "email";
  if (field.format === "date") return "date";
  if (field.format === "uri" || field.format === "url") return "url";
  return "text";
}

function Form({ question }: { question: QuestionMessage }) {
  const { t, connected } = useWidget();
  const { answered, answer } = useAnswer(question);
  const fields = question.fields.slice(0, ELICITATION_FIELDS_MAX);
  const [values, setValues] = useState<Record<string, Value>>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const formRef = useRef<HTMLFormElement>(null);
  const done = answered !== undefined;
  const set = (name: string, v: Value) => setValues((prev) => ({ ...prev, [name]: v }));

  function submit(e: Event) {
    e.preventDefault();
    const found: Record<string, string> = {};
    const content: Record<string, Value> = {};
    for (const f of fields) {
      const raw = values[f.name] ?? (f.kind === "boolean" ? false : undefined);
      const error = validateField(f, raw, t);
      if (error) found[f.name] = error;
      else if (raw !== undefined && raw !== "") content[f.name] = typed(f, raw);
    }
    setErrors(found);
    const first = fields.find((f) => found[f.name]);
    if (first) {
      // Focus the first wrong field so the error is read out where it is.
      (formRef.current?.elements.namedItem(first.name) as HTMLElement | null)?.focus();
      return;
    }
    answer("accept", content);
  }

  return (
    <form class="card question form" ref={formRef} onSubmit={submit} noValidate aria-labelledby={`${question.id}-q`}>
      <p id={`${question.id}-q`} class="question-text">
        {clampText(question.message, 1000)}
      </p>
      <fieldset disabled={done}>
        {fields.map((f) => {
          const id = `${question.id}-${f.name}`;
          const error = errors[f.name];
          const describedBy = [f.description ? `${id}-d` : "", error ? `${id}-e` : ""].filter(Boolean).join(" ") || undefined;
          const label = clampText(f.title ?? f.name, 200);
          const common = {
            id,
            name: f.name,
            "aria-invalid": error ? true : undefined,
            "aria-describedby": describedBy,
            "aria-required": f.required || undefined,
          };
          let control;
          if (f.kind === "boolean") {
            control = (
              <input {...common} type="checkbox" checked={values[f.name] === true} onChange={(e) => set(f.name, (e.currentTarget as HTMLInputElement).checked)} />
            );
          } else if (f.kind === "choice") {
            control = (
              <select {...common} value={String(values[f.name] ?? "")} onChange={(e) => set(f.name, (e.currentTarget as HTMLSelectElement).value)}>
                <option value="">{t.choose}</option>
                {(f.options ?? []).map((o) => (
                  <option value={o.value} key={o.value}>
                    {clampText(o.label, 200)}
                  </option>
                ))}
              </select>
            );
          } else {
            control = (
              <input
                {...common}
                type={f.kind === "string" ? inputType(f) : "text"}
                inputMode={f.kind === "integer" ? "numeric" : f.kind === "number" ? "decimal" : undefined}
                maxLength={f.kind === "string" ? f.maxLength : undefined}
                value={String(values[f.name] ?? "")}
                onInput={(e) => set(f.name, (e.currentTarget as HTMLInputElement).value)}
              />
            );
          }
          return (
            <div class={`form-field kind-${f.kind}`} key={f.name}>
              <label for={id}>
                {label}
                {f.required && f.kind !== "boolean" && <span aria-hidden="true"> *</span>}
              </label>
              {control}
              {f.description && (
                <p id={`${id}-d`} class="muted">
                  {clampText(f.description, 500)}
                </p>
              )}
              {error && (
                <p id={`${id}-e`} class="error">
                  {error}
                </p>
              )}
            </div>
          );
        })}
      </fieldset>
      {done ? (
        <p class="muted">{t.answered}</p>
      ) : (
        <div class="actions">
          <button type="submit" class="primary" disabled={!connected}>
            {t.submit}
          </button>
          <button type="button" disabled={!connected} onClick={() => answer("decline")}>
            {t.decline}
          </button>
        </div>
      )}
    </form>
  );
}
