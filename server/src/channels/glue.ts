// What the parts of the channel glue share: the store of its state, the engine's port, the adapters, whom to
// tell, and the background work idle() waits for. The service (channelService.ts) makes one and hands it on.
import type { ChannelAdapter } from "@caplo/adapters/adapter";
import type { ConversationPort, InboxStore, Platform, TeamAlerts } from "./ports.ts";

export interface Glue {
  readonly store: InboxStore;
  readonly port: ConversationPort;
  readonly alerts: TeamAlerts;
  readonly log: (line: string) => void;
  readonly now: () => number;
  adapter(platform: Platform): ChannelAdapter;
  /** Whether the service was closed: retries and timers stop. */
  closed(): boolean;
  /** Keeps background work (an engine hand-off, a history note) until it settles, for idle(). */
  track(work: Promise<unknown>): void;
  /**
   * The conversation's history records the undelivered message for the team (never sent to the customer).
   * Not awaited: the engine records it after any running turn, which may itself wait on this conversation's sends.
   */
  recordUndelivered(platform: Platform, conversationId: string, text: string): void;
}

/** An error's message, for a log line or an alert. */
export function messageOf(error: unknown): string {
  return String((error as Error)?.message ?? error);
}
