// Renders the engine's outbound messages into WhatsApp messages sent through Twilio: free-form text,
// media, and Content API templates (twilio/quick-reply, twilio/list-picker) within every WhatsApp limit.
import * as C from "@caplo/shared/channels";
import type { Outbound, OutboundOf } from "@caplo/shared/messages";
import type { RenderContext, Rendered, RenderWarning } from "../adapter.ts";
import {
  CANCEL_LABEL,
  CONFIRM_LABEL,
  fillTemplate,
  itemSummary,
  itemTitle,
  lengthOf,
  numberedOptions,
  outcomeText,
  resultText,
  reviewStateText,
  reviewText,
  shorten,
  splitText,
  uniqueLabels,
} from "../common/text.ts";

/**
 * A Content API template of one shape: every body, title, id and description is a variable ({{1}}, {{2}}, …),
 * so one template per type and number of options serves every message of that shape (a title holding an
 * order number does not make a new template). `templateShape` names it; `sampleVariables` gives the sample
 * values Twilio asks for when it is created.
 */
export type ContentTemplate =
  | { type: "twilio/quick-reply"; body: string; actions: Array<{ title: string; id: string }> }
  | { type: "twilio/list-picker"; body: string; button: string; items: Array<{ id: string; item: string; description: string }> };

export type WhatsAppMessage =
  | { kind: "text"; body: string }
  | { kind: "media"; body?: string; mediaUrl: string }
  | { kind: "content"; template: ContentTemplate; variables: Record<string, string> };


/**
 * Whether text can be the body variable of a Content API message: Twilio refuses (error 21656) a body
 * variable that is empty or holds a newline, a tab or more than four spaces in a row; and a variable's value
 * is at most 255 characters.
 */
export function fitsBodyVariable(text: string): boolean {
  return text.trim() !== "" && !/[\r\n\t]| {5,}/.test(text) && lengthOf(text) <= C.TWILIO_VARIABLE_VALUE_MAX;
}

/** The template of a shape: a quick reply with `count` buttons, or a list picker with `count` items. */
export function shapeTemplate(type: ContentTemplate["type"], count: number): ContentTemplate {
  const v = (n: number) => `{{${n}}}`;
  if (type === "twilio/quick-reply") {
    return { type, body: v(1), actions: Array.from({ length: count }, (_, i) => ({ title: v(2 + i * 2), id: v(3 + i * 2) })) };
  }
  return { type, body: v(1), button: "Choose", items: Array.from({ length: count }, (_, i) => ({ item: v(2 + i * 3), id: v(3 + i * 3), description: v(4 + i * 3) })) };
}

/** The shape a template is for: its type and number of options (with the account, the cache key). */
export function templateShape(template: ContentTemplate): string {
  const count = template.type === "twilio/quick-reply" ? template.actions.length : template.items.length;
  return `${template.type}:${count}`;
}

/** A sample value for every variable of a template, as Twilio asks for at creation. */
export function sampleVariables(template: ContentTemplate): Record<string, string> {
  const samples: Record<string, string> = { "1": "Please choose one of these options." };
  const set = (placeholder: string, value: string) => {
    const n = /^\{\{(\d+)\}\}$/.exec(placeholder)?.[1];
    if (n) samples[n] = value;
  };
  if (template.type === "twilio/quick-reply") {
    template.actions.forEach((a, i) => {
      set(a.title, `Option ${i + 1}`);
      set(a.id, `sample-option-${i + 1}`);
    });
  } else {
    template.items.forEach((item, i) => {
      set(item.item, `Option ${i + 1}`);
      set(item.id, `sample-option-${i + 1}`);
      set(item.description, `What option ${i + 1} is`);
    });
  }
  return samples;
}

/**
 * A card's or receipt's value as WhatsApp must be sent it to show it as it is: WhatsApp shows text between
 * `*`, `_`, `~` or backtick pairs bold, italic, struck through or as code, without the marks ("~500~ 50 EUR"
 * reads as a struck-out 500 and 50 EUR, while the tool gets the whole text). A value holding any of them goes
 * in a monospace block, inside which WhatsApp applies no other formatting. One that itself holds the block's
 * three backticks is sent as it is (no block could hold it).
 */
export function literalValue(shown: string): string {
  return /[*_~`]/.test(shown) && !shown.includes("```") ? `\`\`\`${shown}\`\`\`` : shown;
}

/** Text on one line, every run of white space one space. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

export interface ChoiceOption {
  label: string;
  description?: string;
  payload: string;
}

function texts(text: string): WhatsAppMessage[] {
  return splitText(text, C.WHATSAPP_TEXT_MAX).map((body) => ({ kind: "text", body }));
}

/**
 * A prompt with options: reply buttons for up to 3, a list picker for up to 10, numbered text beyond.
 * A body that cannot be an interactive message's body variable (too long, or on several lines) goes first
 * as text, and the buttons follow with `shortPrompt` made one line.
 */
export function choiceMessages(
  body: string,
  options: ChoiceOption[],
  shortPrompt: string,
  warnings: RenderWarning[],
): WhatsAppMessage[] {
  const out: WhatsAppMessage[] = [];
  let prompt = body;
  if (options.length > C.WHATSAPP_LIST_ITEMS_MAX) {
    warnings.push({
      type: "degraded",
      feature: "list",
      detail: `${options.length} options exceed the list picker's ${C.WHATSAPP_LIST_ITEMS_MAX}; sent as numbered text`,
      numbered: options.map((o) => ({ label: o.label, payload: o.payload })),
    });
    return texts(`${body}\n\n${numberedOptions(options)}\n\nReply with a number.`);
  }
  if (!fitsBodyVariable(prompt)) {
    out.push(...texts(body));
    prompt = shorten(oneLine(shortPrompt), C.TWILIO_VARIABLE_VALUE_MAX);
  }
  if (options.length <= C.WHATSAPP_BUTTONS_MAX) {
    const titles = uniqueLabels(options.map((o) => o.label), C.WHATSAPP_BUTTON_TITLE_MAX);
    const variables: Record<string, string> = { "1": prompt };
    titles.forEach((title, i) => {
      variables[String(2 + i * 2)] = title;
      variables[String(3 + i * 2)] = options[i]!.payload;
    });
    out.push({ kind: "content", template: shapeTemplate("twilio/quick-reply", options.length), variables });
    return out;
  }
  const titles = uniqueLabels(options.map((o) => o.label), C.WHATSAPP_LIST_ITEM_TITLE_MAX);
  const variables: Record<string, string> = { "1": prompt };
  titles.forEach((title, i) => {
    const option = options[i]!;
    variables[String(2 + i * 3)] = title;
    variables[String(3 + i * 3)] = option.payload;
    // Twilio requires a description on every item: the option's own, else its whole label when the title had
    // to be shortened, else a plain hint.
    const description = option.description ?? (title !== option.label ? option.label : "Tap to choose this one");
    variables[String(4 + i * 3)] = oneLine(shorten(oneLine(description), C.WHATSAPP_LIST_ITEM_DESCRIPTION_MAX));
  });
  out.push({ kind: "content", template: shapeTemplate("twilio/list-picker", options.length), variables });
  return out;
}

/** Reply actions of a result as options: each tap sends the action's filled template as the customer. */
export function replyOptions(result: OutboundOf<"result">, context: RenderContext): ChoiceOption[] {
  const options: ChoiceOption[] = [];
  const replies = (result.actions ?? []).filter((a) => a.kind === "reply" && a.template);
  for (const item of result.items) {
    for (const action of replies) {
      const title = itemTitle(result, item, context.timeZone);
      const label = result.layout === "choices" || replies.length === 1 ? title : `${action.label}: ${title}`;
      const summary = itemSummary(result, item, context.timeZone);
      options.push({ label, ...(summary ? { description: summary } : {}), payload: context.refs.reply(fillTemplate(action.template!, item)) });
    }
  }
  return options;
}

export function renderWhatsApp(outbound: Outbound, context: RenderContext): Rendered<WhatsAppMessage> {
  const warnings: RenderWarning[] = [];
  const messages = ((): WhatsAppMessage[] => {
    switch (outbound.type) {
      case "text":
        // The customer's own words are not echoed back to them.
        return outbound.from === "customer" ? [] : texts(outbound.text);
      case "progress":
        // WhatsApp has no typing indicator through Twilio: the static label is the status line.
        return outbound.state === "start" && outbound.label ? [{ kind: "text", body: `${outbound.label}…` }] : [];
      case "review": {
        if (outbound.state !== "proposed") return texts(reviewStateText(outbound, context.timeZone, literalValue));
        if (outbound.fields.some((f) => f.editable)) {
          warnings.push({ type: "degraded", feature: "editableFields", detail: "fields cannot be edited on WhatsApp; shown as text" });
        }
        // The fields are several lines: they go as text, and the buttons follow with one line naming the request.
        const body = `${reviewText(outbound, context.timeZone, literalValue)}\n\nTap ${CONFIRM_LABEL} to go ahead or ${CANCEL_LABEL} to stop.`;
        return choiceMessages(
          body,
          [
            { label: CONFIRM_LABEL, payload: context.refs.proposal(outbound.proposalId, "confirm") },
            { label: CANCEL_LABEL, payload: context.refs.proposal(outbound.proposalId, "decline") },
          ],
          `${outbound.title}: tap ${CONFIRM_LABEL} to go ahead or ${CANCEL_LABEL} to stop.`,
          warnings,
        );
      }
      case "outcome":
        return texts(outcomeText(outbound, context.timeZone, literalValue));
      case "result": {
        const out = texts(resultText(outbound, context.timeZone));
        const options = replyOptions(outbound, context);
        if (options.length > 0) out.push(...choiceMessages(outbound.title, options, shorten(outbound.title, 200), warnings));
        return out;
      }
      case "question": {
        const field = outbound.fields[0];
        if (outbound.style !== "questions" || !field?.options || outbound.fields.length !== 1) {
          warnings.push({ type: "degraded", feature: "forms", detail: "form elicitation is not available on WhatsApp; asked as text" });
          const names = outbound.fields.map((f) => `- ${f.title ?? f.name}`).join("\n");
          return texts(`${outbound.message}\n${names}`);
        }
        const options = field.options;
        // Past the buttons, the options are numbered in the body too, so a typed number answers: on one line
        // when it fits (one message), else as lines of text before the list.
        const inline = `${outbound.message} ${options.map((o, i) => `${i + 1}. ${o.label}`).join(" · ")}`;
        const body = options.length <= C.WHATSAPP_BUTTONS_MAX ? outbound.message : fitsBodyVariable(inline) ? inline : `${outbound.message}\n\n${numberedOptions(options)}`;
        return choiceMessages(
          body,
          options.map((o) => ({ label: o.label, payload: context.refs.answer(outbound.elicitationId, field.name, o.value) })),
          shorten(outbound.message, 200),
          warnings,
        );
      }
      case "file": {
        const media = C.WHATSAPP_MEDIA_MAX_BYTES[outbound.mimeType];
        if (media === undefined || outbound.size > media) {
          warnings.push({
            type: "degraded",
            feature: "files",
            detail: media === undefined ? `WhatsApp does not send ${outbound.mimeType} as media; sent as a link` : `${outbound.size} bytes exceed WhatsApp's ${media} for ${outbound.mimeType}; sent as a link`,
          });
          return texts(`${outbound.name}: ${outbound.url}`);
        }
        return [{ kind: "media", body: outbound.name, mediaUrl: outbound.url }];
      }
      case "handoff":
        return texts(outbound.text);
      case "step_up":
        return texts(outbound.text);
    }
  })();
  return { messages, warnings };
}
