// What the customer and the model are told about a write, by its state, as the seeds' outcome table says:
// applied → it succeeded; not applied → it did not go through; pending and unknown → not confirmed yet,
// do not send it again. operationRef and idempotency keys are never part of either text.
import type { WriteRecord, WriteState } from "./ledger.ts";
import type { EngineTool } from "./release.ts";

export function customerText(title: string, write: Pick<WriteRecord, "state" | "result"> & Partial<Pick<WriteRecord, "stepUp">>): string {
  switch (write.state) {
    case "applied":
      return `${title}: done. Your request went through.`;
    case "not_applied": {
      const reason = write.result?.outcome === "not_applied" ? write.result.message : "";
      return `${title} did not go through${reason ? `: ${reason}` : "."}`;
    }
    case "pending":
    case "unknown":
      return `${title} is not confirmed yet. Please don't send it again: we are checking and will let you know here.`;
    case "declined":
      return "Not done: you chose not to go ahead. Nothing was changed.";
    case "cancelled":
      return `${title} was cancelled because a different customer verified in this conversation. Nothing was changed.`;
    case "expired":
      // A write that waited for step-up keeps what it asked for: it expired waiting for the customer to verify.
      if (write.stepUp) return `${title} was not done: you did not verify your identity again in time. Nothing was changed.`;
      return `${title} expired before it was confirmed. Nothing was changed.`;
    case "step_up_required":
      return `To do this (${title}), please verify your identity again.`;
    default:
      return `${title}: ${write.state}.`;
  }
}

/**
 * Why no review card appears for a new write: an earlier one in the conversation is unresolved. Told to the
 * customer (the model is told too, and may say more); the earlier request's title, never its ids.
 */
export function blockedCustomerText(title: string, state: WriteState): string {
  switch (state) {
    case "proposed":
      return `Your earlier request (${title}) must finish first: please confirm it or choose not to on its card. Nothing new was started.`;
    case "step_up_required":
      return `Your earlier request (${title}) must finish first: it waits for you to verify. Nothing new was started.`;
    case "pending":
    case "unknown":
      return `Your earlier request (${title}) must finish first: it is not confirmed yet, and we will tell you here when it is. Nothing new was started.`;
    default:
      return `Your earlier request (${title}) must finish first. Nothing new was started.`;
  }
}

export function modelNote(write: Pick<WriteRecord, "id" | "toolRef" | "state" | "result"> & Partial<Pick<WriteRecord, "stepUp">>): string {
  const head = `[write ${write.toolRef}, proposal ${write.id}]`;
  const state: WriteState = write.state;
  switch (state) {
    case "applied":
      return `${head} outcome: applied. The change happened. Result: ${write.result?.outcome === "applied" ? write.result.text : ""}`;
    case "not_applied":
      return `${head} outcome: not applied. The provider definitely did not make the change: ${write.result?.outcome === "not_applied" ? write.result.message : ""}`;
    case "pending":
    case "unknown":
      return `${head} outcome: ${state}. The change is not confirmed yet. Tell the customer it is not confirmed yet and that they should not send it again. Do not call the tool again: Caplo checks the status and reports the real outcome.`;
    case "declined":
      return `${head} the customer declined. Nothing ran.`;
    case "cancelled":
      return `${head} cancelled: a different customer verified in the conversation. Nothing ran.`;
    case "expired":
      if (write.stepUp) return `${head} expired: the customer did not verify again in time. The tool had asked for it before acting, so nothing was applied; another write may start.`;
      return `${head} the proposal expired before the customer confirmed it. Nothing ran.`;
    case "step_up_required":
      return `${head} the tool needs the customer to verify again; they have been asked. Once they verify, the same call runs again by itself.`;
    default:
      return `${head} state: ${state}.`;
  }
}

/** A write's title as the customer knows it: the presentation's title, else the tool's name in words. */
export function writeTitle(tool: EngineTool | undefined, write: Pick<WriteRecord, "toolRef">): string {
  return tool?.policy.presentation?.title ?? tool?.tool.replaceAll("_", " ").replace(/^./, (first) => first.toUpperCase()) ?? write.toolRef;
}
