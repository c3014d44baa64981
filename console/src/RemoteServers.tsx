// Remote MCP servers, reviewed in the browser as `caplo remote` does on the command line: connect by URL,
// read each tool's description and input schema exactly as the server sent them (shown as text, never as
// markup), classify it read or write with its timeout and confirmation, publish the reviewed set as an
// immutable version, and see drift when the server changes a published tool.
import { useEffect, useState } from "preact/hooks";
import { call, type RemoteDrift, type RemoteListed, type RemoteReview, type RemoteReviewedTool, type RemoteVersionView } from "./api.ts";
import { timeOf, usePoll } from "./poll.ts";
import { ToolTable } from "./tables.tsx";

type Target = { url: string; name: string; authorizationSecret: string };
type Listed = { review: RemoteReview; listed: RemoteListed[]; transport: string; previous: { id: string; drift: RemoteDrift } | null };

export function RemoteServers() {
  const { data, error, refresh } = usePoll<{ versions: RemoteVersionView[] }>("/v1/team/remote/versions", 30_000);
  const [target, setTarget] = useState<Target>({ url: "", name: "", authorizationSecret: "" });
  const [listed, setListed] = useState<Listed | null>(null);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const [published, setPublished] = useState<string | null>(null);

  async function connect(next: Target) {
    setTarget(next);
    setBusy(true);
    setProblem(null);
    setPublished(null);
    const answer = await call<Listed>("POST", "/v1/team/remote/list", { url: next.url.trim(), name: next.name.trim(), ...(next.authorizationSecret.trim() && { authorizationSecret: next.authorizationSecret.trim() }) });
    setBusy(false);
    if (!answer.ok) return setProblem(`${answer.error.code}: ${answer.error.message}`);
    setListed(answer.value);
  }
  async function publish(review: RemoteReview) {
    setBusy(true);
    setProblem(null);
    const answer = await call<{ version: RemoteVersionView; skipped: string[]; created: boolean; fileName: string }>("POST", "/v1/team/remote/publish", { review });
    setBusy(false);
    if (!answer.ok) return setProblem(`${answer.error.code}: ${answer.error.message}`);
    const { version, skipped, created, fileName } = answer.value;
    setPublished(
      `${created ? "Published" : "Already published"} ${version.id} with ${version.tools.length} tool${version.tools.length === 1 ? "" : "s"}${skipped.length ? `; left unreviewed, not published: ${skipped.join(", ")}` : ""}. ` +
        `An agent uses it when published with --packages remote/${fileName} (in your workspace's releases folder).`,
    );
    setListed(null);
    refresh();
  }

  const latest = latestByName(data?.versions ?? []);
  return (
    <section class="card remote" aria-labelledby="remote-title">
      <h2 id="remote-title">Remote MCP servers</h2>
      <p class="muted">
        Connect a server by URL and review its tools: only the tools you classify are published, and a tool the server changes afterwards is not called until it is reviewed again. Hints the server gives (such as read-only) are ignored: the effect is your decision.
      </p>
      <form
        class="remote-connect"
        onSubmit={(event) => {
          event.preventDefault();
          if (!busy) void connect(target);
        }}
      >
        <label>
          Server URL
          <input type="url" required value={target.url} placeholder="https://mcp.example.com/mcp" onInput={(e) => setTarget({ ...target, url: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Name
          <input required pattern="[a-z][a-z0-9\-]{1,39}" value={target.name} placeholder="crm" onInput={(e) => setTarget({ ...target, name: (e.target as HTMLInputElement).value })} />
        </label>
        <label>
          Authorization secret (optional)
          <input value={target.authorizationSecret} placeholder="CRM_TOKEN" onInput={(e) => setTarget({ ...target, authorizationSecret: (e.target as HTMLInputElement).value })} />
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Working…" : "Connect and list tools"}
        </button>
      </form>
      {problem && <p class="error" role="alert">{problem}</p>}
      <div role="status">{published && <p class="notice">{published}</p>}</div>
      {listed && <ReviewForm key={`${listed.review.name}-${listed.review.url}`} listed={listed} busy={busy} onPublish={(review) => void publish(review)} onCancel={() => setListed(null)} />}
      <h3>Published versions</h3>
      {error && <p class="error" role="alert">{error.message}</p>}
      {data && latest.length === 0 && <p>No remote server published in this workspace yet.</p>}
      {latest.map(({ version, earlier }) => (
        <PublishedVersion key={version.id} version={version} earlier={earlier} onReviewAgain={() => void connect({ url: version.url, name: version.name, authorizationSecret: version.authorizationSecret ?? "" })} />
      ))}
    </section>
  );
}

/** The newest version of each name, with the ids of its earlier ones. */
function latestByName(versions: RemoteVersionView[]): { version: RemoteVersionView; earlier: string[] }[] {
  const byName = new Map<string, { version: RemoteVersionView; earlier: string[] }>();
  for (const version of versions) {
    const seen = byName.get(version.name);
    if (seen) seen.earlier.push(version.id);
    else byName.set(version.name, { version, earlier: [] });
  }
  return [...byName.values()];
}

function ReviewForm({ listed, busy, onPublish, onCancel }: { listed: Listed; busy: boolean; onPublish: (review: RemoteReview) => void; onCancel: () => void }) {
  const [tools, setTools] = useState<RemoteReviewedTool[]>(listed.review.tools);
  const change = (name: string, patch: Partial<RemoteReviewedTool>) => setTools((was) => was.map((tool) => (tool.name === name ? { ...tool, ...patch } : tool)));
  const reviewed = tools.filter((tool) => tool.effect !== "unreviewed").length;
  const schemaOf = (name: string) => listed.listed.find((tool) => tool.name === name);
  return (
    <form
      class="remote-review"
      aria-label={`Review of ${listed.review.name}`}
      onSubmit={(event) => {
        event.preventDefault();
        // What the server sends back for publishing is the review only: the server lists the tools again itself.
        onPublish({ ...listed.review, tools: tools.map(({ changed: _changed, confirmation, ...tool }) => (tool.effect === "write" ? { ...tool, confirmation: confirmation ?? "required" } : tool)) });
      }}
    >
      <h3>
        Review of {listed.review.name} <span class="badge">{listed.transport}</span>
      </h3>
      <p class="muted">
        {listed.review.url} lists {tools.length} tool{tools.length === 1 ? "" : "s"}.{" "}
        {listed.previous ? `Decisions of ${listed.previous.id} are kept; tools changed since then are unreviewed again.` : "Every tool starts unreviewed."}
      </p>
      {tools.map((tool) => {
        const server = schemaOf(tool.name);
        const id = `remote-${tool.name}`;
        return (
          <fieldset key={tool.name} class="remote-tool">
            <legend>
              <code>{tool.name}</code>
            </legend>
            {tool.changed && <p class="changed">Changed on the server: {tool.changed}</p>}
            <p class="description">{server?.description || <span class="muted">No description.</span>}</p>
            <details>
              <summary>Input schema</summary>
              <pre class="schema">{JSON.stringify(server?.inputSchema ?? {}, null, 2)}</pre>
            </details>
            <div class="policy">
              <label for={`${id}-effect`}>Effect</label>
              <select id={`${id}-effect`} value={tool.effect} onChange={(e) => change(tool.name, { effect: (e.target as HTMLSelectElement).value as RemoteReviewedTool["effect"] })}>
                <option value="unreviewed">Unreviewed (not published)</option>
                <option value="read">Read</option>
                <option value="write">Write</option>
              </select>
              <label for={`${id}-confirmation`}>Confirmation</label>
              <select id={`${id}-confirmation`} disabled={tool.effect !== "write"} value={tool.effect === "write" ? (tool.confirmation ?? "required") : "required"} onChange={(e) => change(tool.name, { confirmation: (e.target as HTMLSelectElement).value as "required" | "none" })}>
                <option value="required">Customer confirms</option>
                <option value="none">None</option>
              </select>
              <label for={`${id}-timeout`}>Timeout (s)</label>
              <input id={`${id}-timeout`} type="number" min={1} max={30} value={tool.timeoutSeconds} onInput={(e) => change(tool.name, { timeoutSeconds: Number((e.target as HTMLInputElement).value) })} />
            </div>
          </fieldset>
        );
      })}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || reviewed === 0}>
          Publish {reviewed} reviewed tool{reviewed === 1 ? "" : "s"}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function PublishedVersion({ version, earlier, onReviewAgain }: { version: RemoteVersionView; earlier: string[]; onReviewAgain: () => void }) {
  const [check, setCheck] = useState<{ drift: RemoteDrift; checkedAt: string } | { problem: string } | null>(null);
  const [nudge, setNudge] = useState(0);
  useEffect(() => {
    let stopped = false;
    setCheck(null);
    void call<{ drift: RemoteDrift; checkedAt: string }>("POST", `/v1/team/remote/versions/${encodeURIComponent(version.id)}/drift`).then((answer) => {
      if (!stopped) setCheck(answer.ok ? answer.value : { problem: `${answer.error.code}: ${answer.error.message}` });
    });
    return () => {
      stopped = true;
    };
  }, [version.id, nudge]);
  const drift = check && "drift" in check ? check.drift : null;
  const drifted = drift !== null && drift.added.length + drift.changed.length + drift.removed.length > 0;
  return (
    <article class="remote-version" aria-label={`Remote server ${version.name}`}>
      <h4>
        {version.name} <span class="muted">{version.url}</span>
      </h4>
      <p class="muted">
        <code>{version.id}</code> · published {version.publishedBy ? `by ${version.publishedBy} ` : ""}on {timeOf(version.publishedAt)}
        {version.transport ? ` · ${version.transport}` : ""}
      </p>
      <ToolTable tools={version.tools.map((tool) => ({ ...tool, shownAs: tool.modelName }))} />
      {version.unpublished.length > 0 && <p class="muted">Left unreviewed, not published: {version.unpublished.join(", ")}</p>}
      {earlier.length > 0 && <p class="muted">Earlier versions: {earlier.map((id) => id.slice(id.indexOf("@") + 8, id.indexOf("@") + 20)).join(", ")}</p>}
      <div class={`drift ${drifted ? "drifted" : ""}`} role="status">
        {check === null && <p>Checking the server for changes…</p>}
        {check && "problem" in check && <p class="error">The server could not be checked: {check.problem}</p>}
        {drift && !drifted && <p>No drift: the server lists the published tools unchanged (checked {timeOf((check as { checkedAt: string }).checkedAt)}).</p>}
        {drift && drifted && (
          <>
            <p>
              <strong>Drift:</strong> the server changed since this version was published.
            </p>
            <ul>
              {drift.changed.map((name) => (
                <li key={`~${name}`}>
                  <code>{name}</code> changed on the server (description or schema): not called until it is reviewed again.
                </li>
              ))}
              {drift.added.map((name) => (
                <li key={`+${name}`}>
                  <code>{name}</code> is new on the server: not exposed until it is reviewed.
                </li>
              ))}
              {drift.removed.map((name) => (
                <li key={`-${name}`}>
                  <code>{name}</code> is no longer listed by the server.
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
      <div class="actions">
        <button type="button" onClick={() => setNudge((n) => n + 1)}>
          Check again
        </button>
        <button type="button" onClick={onReviewAgain}>
          Review again
        </button>
      </div>
    </article>
  );
}
