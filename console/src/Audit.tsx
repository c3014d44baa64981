// The workspace's audit: every change to its secrets, team members, releases and follow-up outcomes, with
// who made it and when, newest first (the team API's GET /v1/team/audit, only the member's own workspace).
// Entries are read from the first in pages of 500 (`after` the last id read), then new ones every 10 s.
import { useEffect, useState } from "preact/hooks";
import { call, type ApiError } from "./api.ts";
import { timeOf } from "./poll.ts";
import { Table } from "./tables.tsx";

export type AuditEvent = { id: number; at: string; actor: string; action: string; target: string; detail?: Record<string, unknown> };

/** The API's page size: a shorter page is the end for now. */
const PAGE = 500;
const POLL_MS = 10_000;

/** What each action is, in words. */
const ACTIONS: Record<string, string> = {
  "secret.set": "Secret set",
  "secret.removed": "Secret removed",
  "secrets.key_rotated": "Secrets key rotated",
  "member.added": "Member added",
  "member.removed": "Member removed",
  "member.token_changed": "Member's token changed",
  "release.published": "Release published",
  "follow_up.listed": "Write listed for follow-up",
  "follow_up.resolved": "Follow-up outcome recorded",
  "remote.published": "Remote tool version published",
};

/** An entry's details as `name: value` pairs (never a secret's value: the audit holds none). */
function details(detail: Record<string, unknown> | undefined): string {
  if (!detail) return "";
  return Object.entries(detail)
    .map(([name, value]) => `${name}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
    .join(" · ");
}

export function Audit() {
  const [events, setEvents] = useState<AuditEvent[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let after = 0;
    const load = async () => {
      // Every page there is now, then wait for more.
      for (;;) {
        const answer = await call<{ events: AuditEvent[] }>("GET", `/v1/team/audit?after=${after}`);
        if (stopped) return;
        if (!answer.ok) {
          setError(answer.error);
          break;
        }
        setError(null);
        const page = answer.value.events;
        if (page.length > 0) {
          after = page[page.length - 1]!.id;
          setEvents((was) => [...page.slice().reverse(), ...was]);
        }
        if (page.length < PAGE) break;
      }
      setLoaded(true);
      timer = setTimeout(() => void load(), POLL_MS);
    };
    void load();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, []);
  return (
    <main class="page" tabIndex={0} aria-labelledby="audit-title">
      <h1 id="audit-title">Audit</h1>
      <p class="muted">Every change to this workspace's secrets, team members, releases and follow-up outcomes, with who made it and when. Newest first.</p>
      {error && <p class="error" role="alert">{error.message}</p>}
      {loaded && events.length === 0 && <p>Nothing changed yet.</p>}
      {events.length > 0 && (
        <Table aria-labelledby="audit-title" columns={["When", "Who", "What", "Which", "Details"]}>
          {events.map((event) => (
            <tr key={event.id} class="audit-entry">
              <td>
                <time dateTime={event.at}>{timeOf(event.at)}</time>
              </td>
              <td>{event.actor}</td>
              <td>{ACTIONS[event.action] ?? event.action}</td>
              <td>
                <code>{event.target}</code>
              </td>
              <td>{details(event.detail)}</td>
            </tr>
          ))}
        </Table>
      )}
    </main>
  );
}
