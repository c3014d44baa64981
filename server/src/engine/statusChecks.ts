// Status checks: pending and unknown writes asked again, one at a time per write, under a lease claimed in
// the store (several nodes never ask about one write at once), with growing gaps up to the limit.
import { TIMEOUT_SECONDS_MAX, type WriteOutcome } from "@caplo/shared";
import type { WriteRecord } from "./ledger.ts";
import { randomId } from "./common.ts";
import { EnginePart } from "./core.ts";

/** A node's claim on due status checks lasts this long; each check must fit in it with the margin to spare. */
const CHECK_LEASE_MS = 60_000;
const CHECK_LEASE_MARGIN_MS = 5_000;
const CHECK_CLAIM_LIMIT = 20;

export class StatusChecks extends EnginePart {
  checkTimer: NodeJS.Timeout | undefined;

  private checking = false;

  scheduleChecks(): void {
    if (this.core.stopped) return;
    this.checkTimer = setTimeout(() => {
      void this.runDueChecks()
        .catch((error) => this.core.log("error", "status checks failed", { error: String(error) }))
        .finally(() => this.scheduleChecks());
    }, this.core.options.checkPollMs ?? 1000);
    this.checkTimer.unref?.();
  }

  /** Run every status check that is due now, one at a time per write (the claim is a lease). Returns how many ran. */
  async runDueChecks(): Promise<number> {
    if (this.checking) return 0;
    this.checking = true;
    try {
      const now = this.core.now();
      const leaseUntil = now + CHECK_LEASE_MS;
      const claimed = await this.core.store.claimDueChecks(now, leaseUntil, CHECK_CLAIM_LIMIT);
      let ran = 0;
      for (const write of claimed) {
        // One at a time per write: a check starts only if it can end (the tool's timeout and a margin) inside
        // this node's lease. Otherwise another node could claim the write when the lease ends and ask while
        // this one still does; a check that no longer fits (earlier checks were slow) is left, and the write is
        // claimed again when the lease ends.
        const timeoutMs = (this.core.toolForWrite(write)?.policy.timeoutSeconds ?? TIMEOUT_SECONDS_MAX) * 1000;
        if (leaseUntil - this.core.now() < timeoutMs + CHECK_LEASE_MARGIN_MS) continue;
        await this.core.track(this.checkOne(write));
        ran++;
      }
      return ran;
    } finally {
      this.checking = false;
    }
  }

  private async checkOne(write: WriteRecord): Promise<void> {
    const tool = this.core.toolForWrite(write);
    if (!tool || !tool.hasStatus) {
      await this.core.writes.markFollowUp(write);
      return;
    }
    const conversation = await this.core.store.getConversation(write.conversationId);
    let outcome: WriteOutcome;
    try {
      // The write's conversation's workspace: its secrets, never another workspace's.
      if (!conversation) throw new Error(`the write's conversation ${write.conversationId} is missing`);
      outcome = await this.core.options.runner.checkStatus({
        packageVersionId: write.packageVersionId,
        tool: write.tool,
        ...(write.operationRef && { operationRef: write.operationRef }),
        context: {
          invocationId: randomId("inv"),
          conversationId: write.conversationId,
          turnId: write.turnId,
          workspaceId: conversation.workspaceId,
          idempotencyKey: write.idempotencyKey!,
          ...(tool.policy.subject && conversation.subject && { subject: conversation.subject }),
          secrets: await this.core.secrets(write.packageVersionId, conversation.workspaceId),
        },
      });
    } catch (error) {
      outcome = { outcome: "unknown", reason: `the status check failed: ${error instanceof Error ? error.message : String(error)}` };
    }
    await this.core.writes.apply(write, tool, { type: "checked", outcome });
  }

  /** Stop scheduling checks (one already running finishes). */
  stop(): void {
    if (this.checkTimer) clearTimeout(this.checkTimer);
  }
}
