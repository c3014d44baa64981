// The team's handoff endpoint for tests: a real local HTTP server that verifies each request's signature on
// its own (HMAC-SHA256 of "<t>.<body>"), records it, and answers the next scripted status (204 after those).
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";

export type Received = { headers: Record<string, string | string[] | undefined>; body: string; signatureValid: boolean; timestamp: number };

/** The team's endpoint: verifies each request's signature on its own, records it, answers the next scripted status. */
export async function teamEndpoint(secret: string, statuses: number[] = []) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const header = String(req.headers["x-caplo-signature"] ?? "");
      const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
      const expected = match ? createHmac("sha256", secret).update(`${match[1]}.${body}`).digest() : Buffer.alloc(32);
      const signatureValid = !!match && timingSafeEqual(expected, Buffer.from(match[2]!, "hex"));
      received.push({ headers: req.headers, body, signatureValid, timestamp: Number(match?.[1]) });
      res.writeHead(statuses.shift() ?? 204);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/caplo/handoff`, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

