// One conversation as the team sees it: the whole history in the widget's own layouts (review cards with
// the exact arguments, receipts, tables, files: the widget's components, read-only), who holds it and the
// take over / write / hand back controls, internal notes the customer never sees, each write's ledger,
// the tool invocations with their log lines (redacted by the runner), and the model and release pinned.
import { useEffect, useState } from "preact/hooks";
import { call, customerName, type ConversationRecord, type Invocations, type Ledger } from "./api.ts";
import { History } from "./History.tsx";
import { since, timeOf, usePoll } from "./poll.ts";

export function ConversationView({ id, member }: { id: string; member: string }) {
  const { data, error, refresh } = usePoll<ConversationRecord>(`/v1/team/conversations/${encodeURIComponent(id)}/record`);
  const [tab, setTab] = useState<"history" | "writes" | "tools">("history");
  const [told, setTold] = useState<{ text: string; bad: boolean } | null>(null);
  useEffect(() => setTold(null), [id]);
  if (error && !data) return <p class="error" role="alert">{error.message}</p>;
  if (!data || data.conversation.id !== id) return <p class="muted">Loading…</p>;
  const c = data.conversation;
  const heldByMe = c.handoff?.state === "taken" && c.handoff.member === member;
  const heldByOther = c.handoff?.state === "taken" && c.handoff.member !== member;

  async function act(path: "takeover" | "release", done: string) {
    const answer = await call("POST", `/v1/team/conversations/${encodeURIComponent(id)}/${path}`, {});
    if (answer.ok) setTold({ text: done, bad: false });
    else setTold({ text: answer.error.code === "conversation_held" ? "Another member already holds this conversation: it stays with them. Ask them to hand it back first." : answer.error.message, bad: true });
    refresh();
  }

  return (
    <article class="conversation-view" aria-labelledby="conversation-title">
      <header class="conversation-head">
        <div>
          <h2 id="conversation-title">
            {customerName(c)} <span class={`badge ${c.customer.verified ? "ok" : ""}`}>{c.customer.verified ? "verified" : "not verified"}</span>
          </h2>
          <p class="muted meta">
            {c.agent} · {c.channel} · started {timeOf(c.createdAt)} · model {data.release.model ?? "unknown"} · release <code>{shortId(data.release.id)}</code>
            {!data.release.current && " (not the agent's current release)"}
          </p>
          <p class="holder" role="status">
            {c.handoff?.state === "taken"
              ? heldByMe
                ? "You hold this conversation: the agent is silent until you hand it back."
                : `Held by ${c.handoff.member}.`
              : c.handoff
                ? `Handed off${c.handoff.queue ? ` to queue ${c.handoff.queue}` : ""}, waiting ${since(c.handoff.at)}.`
                : "The agent is answering."}
          </p>
        </div>
        <div class="actions">
          {!heldByMe && (
            <button type="button" class="primary" disabled={heldByOther} onClick={() => void act("takeover", "You took over. The customer was told a member of the team joined.")}>
              Take over
            </button>
          )}
          {(heldByMe || (c.handoff && !heldByOther)) && (
            <button type="button" onClick={() => void act("release", "Handed back to the agent. The customer was told.")}>
              Hand back to the agent
            </button>
          )}
        </div>
      </header>
      {told && (
        <p class={told.bad ? "error" : "notice"} role={told.bad ? "alert" : "status"}>
          {told.text}
        </p>
      )}
      <div class="tabs" role="tablist" aria-label="Conversation record">
        {(
          [
            ["history", "History"],
            ["writes", `Writes (${data.writes.length})`],
            ["tools", "Tool calls"],
          ] as const
        ).map(([key, label]) => (
          <button key={key} type="button" role="tab" id={`tab-${key}`} aria-selected={tab === key} aria-controls={`panel-${key}`} onClick={() => setTab(key)}>
            {label}
          </button>
        ))}
      </div>
      <div role="tabpanel" tabIndex={0} id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} class="tab-panel">
        {tab === "history" && <History id={id} page={data} notes={data.notes} />}
        {tab === "writes" && <Writes writes={data.writes} />}
        {tab === "tools" && <Tools id={id} />}
      </div>
      <Composer id={id} heldByMe={heldByMe} onSent={refresh} />
    </article>
  );
}

function shortId(id: string): string {
  return id.length > 24 ? `${id.slice(0, 24)}…` : id;
}

export function Args({ args }: { args: Record<string, unknown> }) {
  return (
    <dl class="args">
      {Object.entries(args).map(([key, value]) => (
        <div key={key}>
          <dt>{key}</dt>
          <dd>
            <code>{JSON.stringify(value)}</code>
          </dd>
        </div>
      ))}
    </dl>
  );
}

function Writes({ writes }: { writes: Ledger[] }) {
  if (writes.length === 0) return <p class="muted">No writes in this conversation.</p>;
  return (
    <div class="writes">
      {writes.map((write) => (
        <section key={write.proposalId} class="ledger card" aria-label={`Write ${write.tool}`}>
          <h3>
            {write.tool} <span class={`badge state-${write.state}`}>{write.state.replace("_", " ")}</span>
            {write.followUp && <span class="badge warn">follow-up</span>}
          </h3>
          <p class="muted">
            Proposal <code>{write.proposalId}</code> · confirmation {write.confirmation} · idempotency key <code>{write.idempotencyKey ?? "none yet"}</code>
            {write.operationRef && (
              <>
                {" "}
                · operation <code>{write.operationRef}</code>
              </>
            )}{" "}
            · status checks {write.checks}
            {write.nextCheckAt && ` (next ${timeOf(write.nextCheckAt)})`}
          </p>
          <h4>Arguments{write.finalArgs ? " that ran" : " proposed"}</h4>
          <Args args={write.finalArgs ?? write.args} />
          {write.result && (
            <p>
              Outcome: <strong>{write.result.outcome.replace("_", " ")}</strong> {write.result.text ?? write.result.message ?? write.result.reason ?? ""}
            </p>
          )}
          <h4>Ledger</h4>
          <ol class="transitions">
            {write.transitions.map((t, i) => (
              <li key={i}>
                <time dateTime={t.at}>{timeOf(t.at)}</time> {t.from === t.to ? t.to : `${t.from} → ${t.to}`}
                {t.note && <span class="muted"> · {t.note}</span>}
              </li>
            ))}
          </ol>
        </section>
      ))}
    </div>
  );
}

/** The node's invocation records of the conversation: read from its invocation log when this tab is open (every 10 s). */
function Tools({ id }: { id: string }) {
  const { data, error } = usePoll<Invocations>(`/v1/team/conversations/${encodeURIComponent(id)}/invocations`, 10_000);
  if (error && !data) return <p class="error" role="alert">{error.message}</p>;
  if (!data) return <p class="muted">Loading…</p>;
  if (!data.invocationsKept) return <p class="muted">This server keeps no invocation log (the test runner); `caplo serve` keeps one beside its database.</p>;
  if (data.invocations.length === 0) return <p class="muted">No tool calls recorded on this node for this conversation.</p>;
  return (
    <ul class="invocations">
      {data.invocations.map((inv) => (
        <li key={inv.id} class="card">
          <p>
            <strong>{inv.tool}</strong> {inv.kind} · {timeOf(inv.at)} · {inv.durationMs} ms · {inv.isError ? "error" : (inv.outcome ?? "ok")}
            {inv.idempotencyKey && (
              <>
                {" "}
                · key <code>{inv.idempotencyKey}</code>
              </>
            )}
          </p>
          {inv.logs.length > 0 && (
            <pre class="logs">{inv.logs.map((line) => `${line.level} ${line.message}`).join("\n")}</pre>
          )}
        </li>
      ))}
    </ul>
  );
}

function Composer({ id, heldByMe, onSent }: { id: string; heldByMe: boolean; onSent: () => void }) {
  const [text, setText] = useState("");
  const [internal, setInternal] = useState(!heldByMe);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => setInternal(!heldByMe), [heldByMe]);
  async function send(event: Event) {
    event.preventDefault();
    const trimmed = text.trim();
    if (!trimmed) return;
    const answer = internal ? await call("POST", `/v1/team/conversations/${encodeURIComponent(id)}/notes`, { text: trimmed }) : await call("POST", `/v1/team/conversations/${encodeURIComponent(id)}/messages`, { text: trimmed });
    if (!answer.ok) return setProblem(answer.error.code === "conversation_not_held" ? "Take the conversation over before writing to the customer." : answer.error.message);
    setProblem(null);
    setText("");
    onSent();
  }
  return (
    <form class={`team-composer${internal ? " internal" : ""}`} onSubmit={(e) => void send(e)}>
      <div class="modes" role="radiogroup" aria-label="Write">
        <label>
          <input type="radio" name="mode" checked={!internal} disabled={!heldByMe} onChange={() => setInternal(false)} /> To the customer
        </label>
        <label>
          <input type="radio" name="mode" checked={internal} onChange={() => setInternal(true)} /> Internal note
        </label>
      </div>
      <label for="team-text" class="sr-only">
        {internal ? "Internal note (the customer never sees it)" : "Message to the customer"}
      </label>
      <textarea id="team-text" rows={2} maxLength={4000} value={text} placeholder={internal ? "Internal note: only the team sees it" : "Write to the customer"} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} onKeyDown={(e) => {
        if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) void send(e);
      }} />
      {problem && <p class="error" role="alert">{problem}</p>}
      <button type="submit" class="primary">
        {internal ? "Add note" : "Send"}
      </button>
    </form>
  );
}
