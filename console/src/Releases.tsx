// Agents and tools: each served release, the model it uses, the package versions it pins and every tool
// with its policy (read or write, confirmation, verified customer, timeout, status checks) and schema; then
// the remote MCP servers of the workspace and their review (RemoteServers.tsx).
import type { Release } from "./api.ts";
import { usePoll } from "./poll.ts";
import { RemoteServers } from "./RemoteServers.tsx";
import { ToolTable } from "./tables.tsx";

export function Releases() {
  const { data, error } = usePoll<{ releases: Release[] }>("/v1/team/releases", 30_000);
  return (
    <main class="page" tabIndex={0} aria-labelledby="agents-title">
      <h1 id="agents-title">Agents and tools</h1>
      {error && <p class="error" role="alert">{error.message}</p>}
      {data?.releases.map((release) => (
        <section key={release.id} class="card release" aria-label={`Agent ${release.agent}`}>
          <h2>{release.agent}</h2>
          <p class="muted">
            Release <code>{release.id}</code> · model {release.model} · channels {release.channels.map((c) => (c.queue ? `${c.channel} (queue ${c.queue})` : c.channel)).join(", ") || "widget"}
          </p>
          <h3>Pinned package versions</h3>
          <ul>
            {release.packages.map((pkg) => (
              <li key={pkg.id}>
                <code>{pkg.id}</code> ({pkg.type})
              </li>
            ))}
          </ul>
          <h3>Tools</h3>
          <ToolTable release tools={release.tools.map((tool) => ({ ...tool, shownAs: tool.ref }))} />
        </section>
      ))}
      <RemoteServers />
    </main>
  );
}
