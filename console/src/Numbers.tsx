// The numbers a team lead looks at: conversations per day, handoff rate, writes by outcome, the follow-up
// backlog and its age, and answers rated up or down.
import type { Numbers } from "./api.ts";
import { usePoll } from "./poll.ts";
import { Table } from "./tables.tsx";

function age(seconds: number | null): string {
  if (seconds === null) return "—";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} days`;
}

export function NumbersView() {
  const { data, error } = usePoll<Numbers>("/v1/team/numbers?days=14", 10_000);
  const peak = Math.max(1, ...(data?.perDay.map((d) => d.count) ?? [1]));
  return (
    <main class="page" tabIndex={0} aria-labelledby="numbers-title">
      <h1 id="numbers-title">Numbers</h1>
      {error && <p class="error" role="alert">{error.message}</p>}
      {data && (
        <>
          <div class="tiles">
            <Tile label={`Conversations (${data.days} days)`} value={String(data.conversations)} />
            <Tile label="Handoff rate" value={`${Math.round(data.handoffRate * 100)} %`} />
            <Tile label="Follow-up backlog" value={String(data.followUps.count)} />
            <Tile label="Oldest follow-up" value={age(data.followUps.oldestSeconds)} />
            <Tile label="Answers rated up" value={String(data.ratings.up)} />
            <Tile label="Answers rated down" value={String(data.ratings.down)} />
          </div>
          <h2>Conversations per day</h2>
          <Table class="per-day" columns={["Day", "Conversations"]}>
            {data.perDay.map((d) => (
              <tr key={d.day}>
                <th scope="row">{d.day}</th>
                <td>
                  <span class="daybar" style={{ width: `${(d.count / peak) * 100}%` }} aria-hidden="true" /> {d.count}
                </td>
              </tr>
            ))}
          </Table>
          <h2>Writes by outcome</h2>
          <table>
            <tbody>
              {Object.entries(data.writesByOutcome).map(([state, count]) => (
                <tr key={state}>
                  <th scope="row">{state.replace("_", " ")}</th>
                  <td>{count}</td>
                </tr>
              ))}
              {Object.keys(data.writesByOutcome).length === 0 && (
                <tr>
                  <td>No writes yet.</td>
                </tr>
              )}
            </tbody>
          </table>
        </>
      )}
    </main>
  );
}

function Tile({ label, value }: { label: string; value: string }) {
  return (
    <div class="tile card">
      <span class="muted">{label}</span>
      <strong>{value}</strong>
    </div>
  );
}
