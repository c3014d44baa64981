// Follow-ups: writes still unknown (or pending) after their last status check. A member checks their own
// system with the exact arguments, idempotency key and operation reference shown here, then records what
// they found (applied or not applied) with a note: kept with who and when, the customer is told, and the
// conversation may start its next write. Recording never runs the tool.
import { useState } from "preact/hooks";
import { call, type FollowUp } from "./api.ts";
import { Args } from "./Conversation.tsx";
import { since, usePoll } from "./poll.ts";

export function FollowUps() {
  const { data, error, refresh } = usePoll<{ writes: FollowUp[]; undelivered: { conversationId: string; text: string; at: string }[] }>("/v1/team/follow-ups");
  // What this member recorded here: said once the card has left the list.
  const [recorded, setRecorded] = useState<string[]>([]);
  return (
    <main class="page" tabIndex={0} aria-labelledby="follow-ups-title">
      <h1 id="follow-ups-title">Follow-ups</h1>
      <p class="muted">Writes whose outcome is still not known after every status check. Check your own system, then record what really happened. Recording never runs the tool again.</p>
      {error && <p class="error" role="alert">{error.message}</p>}
      <div role="status" class="recorded">
        {recorded.map((line, i) => (
          <p key={i} class="notice">{line}</p>
        ))}
      </div>
      {data && data.writes.length === 0 && <p>Nothing to follow up.</p>}
      {data?.writes.map((write) => (
        <FollowUpCard
          key={write.proposalId}
          write={write}
          onDone={(line) => {
            setRecorded((was) => [...was, line]);
            refresh();
          }}
        />
      ))}
      {data && data.undelivered.length > 0 && (
        <section aria-labelledby="undelivered-title">
          <h2 id="undelivered-title">Messages that never reached their customer</h2>
          <ul>
            {data.undelivered.map((u, i) => (
              <li key={i}>
                <a href={`#/c/${encodeURIComponent(u.conversationId)}`}>{u.conversationId}</a> · {since(u.at)} ago: {u.text}
              </li>
            ))}
          </ul>
        </section>
      )}
    </main>
  );
}

function FollowUpCard({ write, onDone }: { write: FollowUp; onDone: (line: string) => void }) {
  const [outcome, setOutcome] = useState<"applied" | "not_applied" | "">("");
  const [note, setNote] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const name = `outcome-${write.proposalId}`;
  async function record(event: Event) {
    event.preventDefault();
    if (!outcome) return setProblem("Choose what you found: applied or not applied.");
    if (!note.trim()) return setProblem("Say what you checked: the note is kept with the outcome.");
    const answer = await call("POST", `/v1/team/follow-ups/${encodeURIComponent(write.proposalId)}/outcome`, { outcome, note: note.trim() });
    if (!answer.ok) return setProblem(answer.error.message);
    setProblem(null);
    onDone(`${write.tool} in ${write.conversationId}: recorded as ${outcome === "applied" ? "applied" : "not applied"}. The customer was told.`);
  }
  return (
    <section class="card follow-up" aria-label={`Follow-up ${write.tool}`}>
      <h2>
        {write.tool} <span class="badge warn">{write.state}</span>
      </h2>
      <p class="muted">
        Conversation <a href={`#/c/${encodeURIComponent(write.conversationId)}`}>{write.conversationId}</a> · unresolved for {since(write.updatedAt)} after {write.checks} status check{write.checks === 1 ? "" : "s"}
      </p>
      <p>
        Idempotency key <code>{write.idempotencyKey ?? "none"}</code>
        {write.operationRef && (
          <>
            {" "}
            · operation <code>{write.operationRef}</code>
          </>
        )}
      </p>
      <Args args={write.args} />
      <form onSubmit={(e) => void record(e)}>
          <fieldset>
            <legend>What did you find in your system?</legend>
            <label>
              <input type="radio" name={name} value="applied" checked={outcome === "applied"} onChange={() => setOutcome("applied")} /> Applied: the change was made
            </label>
            <label>
              <input type="radio" name={name} value="not_applied" checked={outcome === "not_applied"} onChange={() => setOutcome("not_applied")} /> Not applied: the change was not made
            </label>
          </fieldset>
          <label for={`note-${write.proposalId}`}>Note (what you checked)</label>
          <textarea id={`note-${write.proposalId}`} rows={2} maxLength={2000} value={note} onInput={(e) => setNote((e.target as HTMLTextAreaElement).value)} />
          {problem && <p class="error" role="alert">{problem}</p>}
          <button type="submit" class="primary">Record outcome</button>
      </form>
    </section>
  );
}
