// The console's calls to the team API, with the session cookie (same origin) and, for every change, the
// session's CSRF token in its header. Answers are the team API's JSON; errors are its { code, path, message }.
export type ApiError = { code: string; path: string; message: string };
export type Answer<T> = { ok: true; value: T } | { ok: false; status: number; error: ApiError };

let csrf: string | null = null;
/** Called when any call finds the session gone (expired, signed out elsewhere): the app shows sign-in. */
let onSignedOut: () => void = () => undefined;

export function setSession(token: string | null): void {
  csrf = token;
}
export function whenSignedOut(callback: () => void): void {
  onSignedOut = callback;
}

export async function call<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<Answer<T>> {
  const headers: Record<string, string> = { accept: "application/json" };
  if (method !== "GET") {
    headers["content-type"] = "application/json";
    if (csrf) headers["x-caplo-csrf"] = csrf;
  }
  let response: Response;
  try {
    response = await fetch(path, { method, headers, credentials: "same-origin", cache: "no-store", ...(body !== undefined && { body: JSON.stringify(body) }) });
  } catch {
    return { ok: false, status: 0, error: { code: "offline", path: "", message: "The server cannot be reached. Retrying…" } };
  }
  const parsed = (await response.json().catch(() => ({}))) as { error?: ApiError };
  if (response.ok) return { ok: true, value: parsed as T };
  if (response.status === 401 && path !== "/v1/team/session") onSignedOut();
  return { ok: false, status: response.status, error: parsed.error ?? { code: `http_${response.status}`, path: "", message: `The server answered ${response.status}.` } };
}

// ------------------------------------------------------------------ the shapes the console reads

export type Handoff = { state: "requested" | "taken"; queue: string | null; member: string | null; at: string | null };
export type Summary = {
  id: string;
  agent: string;
  channel: string;
  customer: { verified: boolean; id: string | null };
  handoff: Handoff | null;
  lastMessage: { from: string; text: string; at: string | null } | null;
  lastSeq: number;
  /** The last seq this member has read (kept on the server: every browser and node agrees). */
  readSeq: number;
  createdAt: string;
  waitingSince: string | null;
  unknownWrites: number;
  followUps: number;
};
/** The customer's id where known (verified, or the messaging app's), else "Visitor" and the conversation's last characters. */
export function customerName(c: Summary): string {
  return c.customer.id ?? `Visitor ${c.id.slice(-4)}`;
}

export type Ledger = {
  proposalId: string;
  tool: string;
  state: string;
  confirmation: string;
  args: Record<string, unknown>;
  finalArgs: Record<string, unknown> | null;
  idempotencyKey: string | null;
  operationRef: string | null;
  checks: number;
  nextCheckAt: string | null;
  followUp: boolean;
  result: { outcome: string; text?: string; message?: string; reason?: string } | null;
  subjectId: string | null;
  packageVersionId: string;
  node: string | null;
  createdAt: string;
  updatedAt: string;
  transitions: { at: string; from: string; to: string; note: string | null }[];
};
export type Invocation = { id: string; tool: string; kind: string; at: string; durationMs: number; isError: boolean; outcome: string | null; idempotencyKey: string | null; logs: { level: string; message: string; at?: string }[] };
export type Note = { id: string; member: string; text: string; at: string };
export type StoredEvent = { seq: number; at: string; message: import("@caplo/shared").Outbound };
/** A page of a conversation's events (oldest first) and the seq to ask the next older page before (null: none older). */
export type EventsPage = { events: StoredEvent[]; olderBefore: number | null };
export type ConversationRecord = EventsPage & {
  conversation: Summary;
  release: { id: string; current: boolean; model: string | null };
  writes: Ledger[];
  notes: Note[];
};
export type Invocations = { invocations: Invocation[]; invocationsKept: boolean };
export type FollowUp = { proposalId: string; conversationId: string; tool: string; state: string; args: Record<string, unknown>; idempotencyKey: string | null; operationRef: string | null; checks: number; updatedAt: string };
/** A tool's description, input schema and policy, as a release and a published remote server version show it alike. */
export type ToolView = { description: string; effect: string; confirmation: string | null; timeoutSeconds: number | null; hasStatus: boolean; inputSchema: Record<string, unknown> };
export type Release = {
  id: string;
  agent: string;
  model: string;
  channels: { channel: string; queue: string | null }[];
  packages: { id: string; name: string; type: string; contentHash: string }[];
  tools: (ToolView & { ref: string; packageVersionId: string; subject: string | null })[];
};
export type Numbers = {
  days: number;
  conversations: number;
  perDay: { day: string; count: number }[];
  handoffRate: number;
  writesByOutcome: Record<string, number>;
  followUps: { count: number; oldestSeconds: number | null };
  ratings: { up: number; down: number };
};

/** A remote MCP server's review, as `caplo remote` writes it (server/src/remote/remoteReview.ts). */
export type RemoteReviewedTool = { name: string; description?: string; schemaHash: string; effect: "unreviewed" | "read" | "write"; timeoutSeconds: number; confirmation?: "required" | "none"; changed?: string };
export type RemoteReview = { apiVersion: "v1"; kind: "RemoteMcpReview"; name: string; url: string; authorizationSecret?: string; transport?: string; tools: RemoteReviewedTool[] };
/** A tool as the server lists it now: description and schemas as sent (shown as text). */
export type RemoteListed = { name: string; description: string; inputSchema: Record<string, unknown>; outputSchema: Record<string, unknown> | null; schemaHash: string };
export type RemoteDrift = { added: string[]; changed: string[]; removed: string[] };
export type RemoteVersionView = {
  id: string;
  name: string;
  url: string;
  transport: string | null;
  authorizationSecret: string | null;
  publishedAt: string;
  publishedBy: string | null;
  unpublished: string[];
  tools: (ToolView & { name: string; modelName: string })[];
};
