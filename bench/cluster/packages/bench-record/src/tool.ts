// The benchmarks' write tool: POSTs to the benchmark's backend with the call's idempotency key; the
// backend applies each key once, so a write run twice would show there, and answers status checks.
import { applied, defineTool, rejected } from "@caplo/tools";

export default defineTool({
  name: "record_note",
  description: "Record a note on an order, for example SO-1002.",
  inputSchema: {
    type: "object",
    properties: { orderId: { type: "string", pattern: "^SO-[0-9]{4}$" }, note: { type: "string", maxLength: 200 } },
    required: ["orderId", "note"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: { orderId: { type: "string" }, runs: { type: "number" } },
    required: ["orderId"],
  },
  async handler({ orderId, note }, { secrets, signal, idempotencyKey }) {
    const response = await fetch(`${secrets.get("BENCH_URL")}/writes`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": idempotencyKey ?? "" },
      body: JSON.stringify({ orderId, note }),
      signal,
    });
    if (response.status === 200) return { orderId, runs: ((await response.json()) as { runs: number }).runs };
    if (response.status === 400) return rejected("The note was refused.");
    throw new Error(`record failed with ${response.status}`);
  },
  async status(_args, { secrets, signal, idempotencyKey }) {
    const response = await fetch(`${secrets.get("BENCH_URL")}/writes?key=${encodeURIComponent(idempotencyKey ?? "")}`, { signal });
    if (response.status === 404) return rejected("The note was not recorded.");
    if (!response.ok) throw new Error(`status lookup failed with ${response.status}`);
    const body = (await response.json()) as { orderId: string; runs: number };
    return applied({ orderId: body.orderId, runs: body.runs });
  },
});
