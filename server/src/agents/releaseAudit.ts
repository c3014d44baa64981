// A publish in the workspace's audit: who made a release its agent's latest (the one `caplo serve` serves),
// when, and which release was the latest before. Recorded by `caplo agent publish` when it publishes, not by
// a server when it first serves the release.
import type { AuditEvent, Store } from "../store/store.ts";

export const RELEASE_PUBLISHED = "release.published";

/**
 * Records `release.published` (target: the agent; detail: the release and the previous one) unless the
 * workspace's last recorded publish of the agent is this release already: publishing unchanged content again
 * changes nothing, and a publish whose entry could not be stored is recorded when it is run again.
 */
export async function auditPublish(
  store: Pick<Store, "ensureWorkspace" | "lastAudit" | "appendAudit">,
  publish: { workspaceId: string; agent: string; releaseId: string; actor: string; at: number },
): Promise<AuditEvent | undefined> {
  const last = await store.lastAudit(publish.workspaceId, RELEASE_PUBLISHED, publish.agent);
  const previous = last?.detail?.release;
  if (previous === publish.releaseId) return undefined;
  await store.ensureWorkspace(publish.workspaceId, publish.at);
  return store.appendAudit({
    workspaceId: publish.workspaceId,
    at: publish.at,
    actor: publish.actor,
    action: RELEASE_PUBLISHED,
    target: publish.agent,
    detail: { release: publish.releaseId, ...(typeof previous === "string" && { previous }) },
  });
}
