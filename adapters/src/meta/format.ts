// Renders outbound messages for Meta's messaging platforms (Messenger and Instagram share the shapes):
// text split at the limit, quick replies, the button template, typing indicators and attachments.
import type { Outbound } from "@caplo/shared/messages";
import type { RenderContext, Rendered, RenderWarning } from "../adapter.ts";
import {
  AGENT_DISCLOSURE,
  CANCEL_LABEL,
  CONFIRM_LABEL,
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
import { replyOptions, type ChoiceOption } from "../whatsapp/format.ts";
import type { GraphMessage } from "./api.ts";

/** The limits of one Meta platform. */
export interface MetaLimits {
  name: "Messenger" | "Instagram";
  textMax: number;
  measure: (text: string) => number;
  quickRepliesMax: number;
  quickReplyTitleMax: number;
  buttonTemplate: boolean;
  buttonTextMax: number;
  buttonsMax: number;
  buttonTitleMax: number;
  payloadMax: number;
  /** Attachment types the platform sends as files. */
  fileTypes: readonly string[];
  disclosureOnRelease: boolean;
}

function texts(text: string, limits: MetaLimits): GraphMessage[] {
  return splitText(text, limits.textMax, limits.measure).map((t) => ({ kind: "message", message: { text: t } }));
}

/**
 * A prompt with options: the button template for up to 3 (where the platform has it), quick replies up to
 * 13, numbered text beyond. Text too long for the template goes first as plain text.
 */
export function metaChoices(body: string, options: ChoiceOption[], shortPrompt: string, limits: MetaLimits, warnings: RenderWarning[]): GraphMessage[] {
  if (options.length > limits.quickRepliesMax) {
    warnings.push({
      type: "degraded",
      feature: "quick_replies",
      detail: `${options.length} options exceed ${limits.quickRepliesMax} quick replies; sent as numbered text`,
      numbered: options.map((o) => ({ label: o.label, payload: o.payload })),
    });
    return texts(`${body}\n\n${numberedOptions(options)}\n\nReply with a number.`, limits);
  }
  const out: GraphMessage[] = [];
  if (limits.buttonTemplate && options.length <= limits.buttonsMax) {
    let prompt = body;
    if (limits.measure(prompt) > limits.buttonTextMax) {
      out.push(...texts(body, limits));
      prompt = shorten(shortPrompt, limits.buttonTextMax);
    }
    const titles = uniqueLabels(options.map((o) => o.label), limits.buttonTitleMax);
    out.push({
      kind: "message",
      message: {
        attachment: {
          type: "template",
          payload: {
            template_type: "button",
            text: prompt,
            buttons: titles.map((title, i) => ({ type: "postback", title, payload: options[i]!.payload })),
          },
        },
      },
    });
    return out;
  }
  const parts = splitText(body, limits.textMax, limits.measure);
  const last = parts.pop() ?? shortPrompt;
  out.push(...parts.map((t): GraphMessage => ({ kind: "message", message: { text: t } })));
  const titles = uniqueLabels(options.map((o) => o.label), limits.quickReplyTitleMax);
  out.push({
    kind: "message",
    message: { text: last, quick_replies: titles.map((title, i) => ({ content_type: "text", title, payload: options[i]!.payload })) },
  });
  return out;
}

export function renderMeta(outbound: Outbound, context: RenderContext, limits: MetaLimits): Rendered<GraphMessage> {
  const warnings: RenderWarning[] = [];
  const messages = ((): GraphMessage[] => {
    switch (outbound.type) {
      case "text":
        return outbound.from === "customer" ? [] : texts(outbound.text, limits);
      case "progress":
        return [{ kind: "action", action: outbound.state === "start" ? "typing_on" : "typing_off" }];
      case "review": {
        if (outbound.state !== "proposed") return texts(reviewStateText(outbound, context.timeZone), limits);
        if (outbound.fields.some((f) => f.editable)) {
          warnings.push({ type: "degraded", feature: "editableFields", detail: `fields cannot be edited on ${limits.name}; shown as text` });
        }
        return metaChoices(
          `${reviewText(outbound, context.timeZone)}\n\nTap ${CONFIRM_LABEL} to go ahead or ${CANCEL_LABEL} to stop.`,
          [
            { label: CONFIRM_LABEL, payload: context.refs.proposal(outbound.proposalId, "confirm") },
            { label: CANCEL_LABEL, payload: context.refs.proposal(outbound.proposalId, "decline") },
          ],
          `Confirm or cancel: ${outbound.title}?`,
          limits,
          warnings,
        );
      }
      case "outcome":
        return texts(outcomeText(outbound, context.timeZone), limits);
      case "result": {
        const out = texts(resultText(outbound, context.timeZone), limits);
        const options = replyOptions(outbound, context);
        if (options.length > 0) out.push(...metaChoices(outbound.title, options, outbound.title, limits, warnings));
        return out;
      }
      case "question": {
        const field = outbound.fields[0];
        if (outbound.style !== "questions" || !field?.options || outbound.fields.length !== 1) {
          warnings.push({ type: "degraded", feature: "forms", detail: `form elicitation is not available on ${limits.name}; asked as text` });
          return texts(`${outbound.message}\n${outbound.fields.map((f) => `- ${f.title ?? f.name}`).join("\n")}`, limits);
        }
        const options = field.options;
        const useButtons = limits.buttonTemplate && options.length <= limits.buttonsMax;
        const body = useButtons ? outbound.message : `${outbound.message}\n\n${numberedOptions(options)}`;
        return metaChoices(
          body,
          options.map((o) => ({ label: o.label, payload: context.refs.answer(outbound.elicitationId, field.name, o.value) })),
          outbound.message,
          limits,
          warnings,
        );
      }
      case "file": {
        const type = outbound.mimeType.startsWith("image/") ? "image" : "file";
        if (!limits.fileTypes.includes(type)) {
          warnings.push({ type: "degraded", feature: "files", detail: `${limits.name} does not send ${outbound.mimeType} files; sent as a link` });
          return texts(`${outbound.name}: ${outbound.url}`, limits);
        }
        return [{ kind: "message", message: { attachment: { type, payload: { url: outbound.url, is_reusable: false } } } }];
      }
      case "handoff": {
        const out = texts(outbound.text, limits);
        if (outbound.state === "released" && limits.disclosureOnRelease) out.push(...texts(context.disclosure ?? AGENT_DISCLOSURE, limits));
        return out;
      }
      case "step_up":
        return texts(outbound.text, limits);
    }
  })();
  return { messages, warnings };
}

export { lengthOf };
