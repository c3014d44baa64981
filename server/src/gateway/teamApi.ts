// The team's HTTP API: list conversations and their events, take one over, write in it, hand it back, and
// list writes still unresolved after their last status check for follow-up. Every team member has a token
// of their own (teamMembers.ts); the member a request acts as is the one whose token it presents, never a
// name in the body, so one member cannot write as another. A missing or unknown token gets 401 before
// anything is read or changed. The team console (server/src/console) signs a member in once and then sends
// its session cookie instead of the token: a change made with a session also needs the session's CSRF token
// in a header and an Origin of this server's own (sessions.ts).
// anything is read or changed. A member sees only their own workspace: another workspace's conversation is
// answered exactly like one that does not exist (404 conversation_not_found), so its id is never confirmed.
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { DeliveryRecord, Engine } from "../engine/engine.ts";
import { HANDOFF_QUEUE_PATTERN } from "@caplo/shared";
import type { ConversationRecord, HandoffNotice, RatingCounts, WriteRecord } from "../store/store.ts";
import { readJson, sendError, sendJson, type RouteTable } from "./http.ts";
import type { TeamMember } from "./teamMembers.ts";
import type { TeamDirectory } from "../members/index.ts";
import type { EvalService } from "../eval/evalService.ts";
import { CSRF_HEADER, sameSecret, type ConsoleSessions } from "../console/sessions.ts";
import { eventsBefore } from "../console/inbox.ts";
import { EVAL_CASES_MAX_BYTES, EVAL_REPEAT_MAX, EVENT_SEQ_MAX } from "@caplo/shared";

const BODY_MAX = 16 * 1024;
/** Takeover and release take no fields: who acts is the token's member. */
const emptySchema = z.strictObject({});
const messageSchema = z.strictObject({ text: z.string().min(1).max(4000) });
const fixturesSchema = z.strictObject({ packageVersionId: z.string().min(1).max(300) });
/** An eval run: a served release (id or agent name) and the cases file's YAML text (docs/evaluations.md). */
const evalRunSchema = z.strictObject({
  release: z.string().min(1).max(200),
  cases: z.string().min(1).max(EVAL_CASES_MAX_BYTES),
  repeat: z.int().min(1).max(EVAL_REPEAT_MAX).optional(),
  minPass: z.string().max(10).optional(),
});

/** The team API without any member, configured or managed. */
export const TEAM_API_DISABLED = { code: "team_api_disabled", path: "", message: "the team has no members: configure CAPLO_TEAM_MEMBERS or add one with caplo member add; see docs/operators/team-api.md" };

/** How the team API accepts console sessions: the sessions, and this server's own origins (for changes). */
export type ConsoleAuth = { sessions: ConsoleSessions; ownOrigins: () => ReadonlySet<string> };

export type TeamHandler = (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, member: TeamMember) => void | Promise<void>;

/** The conversation as the team lists it; `ratings`: how many of the agent's replies the visitor rated up and down. */
function conversationView(conversation: ConversationRecord, ratings: RatingCounts = { up: 0, down: 0 }) {
  return {
    id: conversation.id,
    workspace: conversation.workspaceId,
    agent: conversation.agent,
    channel: conversation.channel,
    handoff: conversation.handoff,
    verified: conversation.subject !== null,
    createdAt: new Date(conversation.createdAt).toISOString(),
    lastSeq: conversation.lastSeq,
    ratings,
  };
}

/** What the team needs to check their own system: the tool, the exact arguments, the key and the operation reference. */
function followUpView(write: WriteRecord) {
  return {
    proposalId: write.id,
    conversationId: write.conversationId,
    tool: write.toolRef,
    state: write.state,
    args: write.finalArgs ?? write.args,
    idempotencyKey: write.idempotencyKey,
    operationRef: write.operationRef,
    checks: write.checkCount,
    result: write.result,
    updatedAt: new Date(write.updatedAt).toISOString(),
  };
}

/**
 * How one outbound event went out on a messaging channel: its furthest status over its message parts (the
 * least advanced one: an event is read when every part of it is), and each part with its status history.
 */
function deliveryView(parts: DeliveryRecord[]) {
  const iso = (at: number) => new Date(at).toISOString();
  const messages = parts.filter((p) => p.part >= 0);
  const order = ["failed", "undelivered", "queued", "accepted", "sending", "sent", "delivered", "read"];
  const least = messages.some((p) => p.state === "failed") ? "failed" : messages.map((p) => p.status ?? "sent").sort((a, b) => order.indexOf(a) - order.indexOf(b))[0];
  return {
    channel: parts[0]!.channel,
    ...(least ? { status: least } : {}),
    parts: parts.map((p) => ({
      part: p.part,
      state: p.state,
      ...(p.status ? { status: p.status } : {}),
      ...(p.platformId ? { platformId: p.platformId } : {}),
      attempts: p.attempts,
      ...(p.code ? { code: p.code } : {}),
      ...(p.message ? { message: p.message } : {}),
      at: iso(p.at),
      statuses: p.statuses.map((s) => ({ status: s.status, at: iso(s.at), ...(s.errorCode !== undefined ? { errorCode: s.errorCode } : {}) })),
    })),
  };
}

/** Where a handoff notice to the team's webhook stands: delivered, still being tried, or failed (and why). */
function noticeView(notice: HandoffNotice) {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: notice.id,
    queue: notice.queue,
    state: notice.state,
    attempts: notice.attempts,
    lastStatus: notice.lastStatus,
    lastError: notice.lastError,
    nextAttemptAt: notice.state === "pending" ? iso(notice.nextAttemptAt) : null,
    createdAt: iso(notice.createdAt),
    updatedAt: iso(notice.updatedAt),
  };
}


/** The conversation `id` if it belongs to the member's workspace: another workspace's is as one that does not exist. */
export async function conversationInWorkspace(engine: Pick<Engine, "conversation">, id: string, member: TeamMember): Promise<ConversationRecord | undefined> {
  const conversation = await engine.conversation(id);
  return conversation && conversation.workspaceId === member.workspaceId ? conversation : undefined;
}

export const conversationNotFound = (res: ServerResponse) => sendError(res, 404, { code: "conversation_not_found", path: "id", message: "no such conversation" });

/** What a change to one conversation does once its body is checked and the conversation is the member's. */
type ConversationChange<T> = (input: T, conversation: ConversationRecord, res: ServerResponse, member: TeamMember) => void | Promise<void>;

/**
 * The handler of a change to the conversation `:id` (a POST): the JSON body is read and checked by `schema`
 * first, then the conversation is looked up in the member's workspace (404 conversation_not_found otherwise).
 */
export function conversationChange(engine: Pick<Engine, "conversation">, body: BodyReader) {
  return <T>(schema: z.ZodType<T>, change: ConversationChange<T>): TeamHandler =>
    async (req, res, params, member) => {
      const input = await body(req, res, schema);
      if (input === undefined) return;
      const conversation = await conversationInWorkspace(engine, params.id!, member);
      if (!conversation) return conversationNotFound(res);
      return change(input, conversation, res, member);
    };
}

export function registerTeamApi(routes: RouteTable, engine: Engine, team: TeamDirectory, evals?: EvalService, consoleAuth?: ConsoleAuth): { guarded: Guard; body: BodyReader } {
  const guarded = (handler: TeamHandler) => async (req: IncomingMessage, res: ServerResponse, params: Record<string, string>) => {
    let member: TeamMember | undefined;
    if (req.headers.authorization !== undefined || !consoleAuth) member = await team.authenticate(req.headers.authorization);
    else {
      const found = await consoleAuth.sessions.fromRequest(req, team);
      if (found && req.method !== "GET" && req.method !== "HEAD") {
        // A change made with the cookie: the page must be this server's own and know the session's CSRF token.
        const csrf = req.headers[CSRF_HEADER];
        if (typeof csrf !== "string" || !sameSecret(csrf, found.session.csrf) || !consoleAuth.ownOrigins().has(req.headers.origin ?? "")) {
          req.resume();
          return sendError(res, 403, { code: "csrf_failed", path: CSRF_HEADER, message: "a change made with a console session needs its CSRF token and a page of this server's own origin" });
        }
      }
      member = found?.member;
    }
    if (!member) {
      req.resume(); // the body is never read, let alone acted on
      if (!(await team.any())) return sendError(res, 503, TEAM_API_DISABLED);
      return sendError(res, 401, { code: "unauthorized", path: "authorization", message: "a valid team member's bearer token is required" }, { "www-authenticate": 'Bearer realm="caplo-team"' });
    }
    return handler(req, res, params, member);
  };
  const body = async <T>(req: IncomingMessage, res: ServerResponse, schema: z.ZodType<T>, maxBytes = BODY_MAX): Promise<T | undefined> => {
    const read = await readJson(req, maxBytes);
    if (!read.ok) {
      sendError(res, read.status, read.error);
      return undefined;
    }
    const parsed = schema.safeParse(read.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      if (issue.code === "unrecognized_keys") {
        const key = issue.keys[0]!;
        const message = key === "member" ? "member comes from your token: leave it out (one member cannot act as another)" : `unknown field "${key}"`;
        sendError(res, 400, { code: "field_unknown", path: [...issue.path.map(String), key].join("."), message });
        return undefined;
      }
      sendError(res, 400, { code: "body_invalid", path: issue.path.map(String).join("."), message: issue.message });
      return undefined;
    }
    return parsed.data;
  };
  const change = conversationChange(engine, body);
  /** The conversation if it is the member's workspace's; otherwise undefined, as if it did not exist. */
  const ownConversation = (id: string, member: TeamMember) => conversationInWorkspace(engine, id, member);
  const notFound = conversationNotFound;
  const answer = (res: ServerResponse, result: Awaited<ReturnType<Engine["takeOver"]>>) => {
    if (result.ok) return sendJson(res, 200, { ok: true });
    const status = result.error.code === "conversation_not_found" ? 404 : 409;
    return sendError(res, status, result.error);
  };

  routes.add(
    "GET",
    "/v1/team/me",
    guarded((_req, res, _params, member) => sendJson(res, 200, { member: member.name, workspace: member.workspaceId })),
  );
  routes.add(
    "GET",
    "/v1/team/conversations",
    guarded(async (req, res, _params, member) => {
      const url = new URL(req.url ?? "/", "http://gateway");
      const handoff = url.searchParams.get("handoff");
      // ?queue=NAME: the conversations handed to that queue (the agent's handoff destination) or held after it.
      const queue = url.searchParams.get("queue");
      if (queue !== null && !HANDOFF_QUEUE_PATTERN.test(queue)) return sendError(res, 400, { code: "queue_invalid", path: "queue", message: "a queue name: lowercase letters, digits and dashes, starting with a letter" });
      const conversations = await engine.listConversations({ workspaceId: member.workspaceId, ...(queue !== null ? { handoff: true } : handoff !== null && { handoff: handoff === "1" || handoff === "true" }), limit: 200 });
      const listed = queue === null ? conversations : conversations.filter((conversation) => conversation.handoff?.queue === queue);
      const ratings = await engine.ratingCounts(listed.map((conversation) => conversation.id));
      sendJson(res, 200, { conversations: listed.map((conversation) => conversationView(conversation, ratings.get(conversation.id))) });
    }),
  );
  routes.add(
    "GET",
    "/v1/team/conversations/:id/events",
    guarded(async (req, res, params, member) => {
      const conversation = await ownConversation(params.id!, member);
      if (!conversation) return notFound(res);
      const query = new URL(req.url ?? "/", "http://gateway").searchParams;
      const after = Number(query.get("after") ?? "0");
      if (!Number.isInteger(after) || after < 0 || after > EVENT_SEQ_MAX) return sendError(res, 400, { code: "after_invalid", path: "after", message: `after is a whole number from 0 to ${EVENT_SEQ_MAX}` });
      const before = query.has("before") ? Number(query.get("before")) : undefined;
      if (before !== undefined && (!Number.isInteger(before) || before < 1 || before > EVENT_SEQ_MAX)) return sendError(res, 400, { code: "before_invalid", path: "before", message: `before is the seq of an event, a whole number from 1 to ${EVENT_SEQ_MAX}: the page of events just older than it is sent` });
      if (before !== undefined && query.has("after")) return sendError(res, 400, { code: "after_invalid", path: "after", message: "ask for events after a seq or before one, not both" });
      // ?before=N: the page of events just older than N (the console's history, newest first, on scroll).
      // Read from the store, not this node's memory of recent events (which another node's appends do not reach).
      const page = before === undefined ? undefined : await eventsBefore(engine.consoleInbox, conversation.id, Math.min(before, conversation.lastSeq + 1));
      const events = page?.events ?? (await engine.consoleInbox.listEvents(conversation.id, after, 1000));
      // An outbound event sent on a messaging channel carries how it went out and what the platform reported since.
      const deliveries = new Map<number, DeliveryRecord[]>();
      for (const record of await engine.deliveries(conversation.id)) deliveries.set(record.seq, [...(deliveries.get(record.seq) ?? []), record]);
      // Each rated reply carries the visitor's rating as it stands (the latest one given).
      const ratings = new Map((await engine.ratings(conversation.id)).map((rated) => [rated.seq, rated.rating]));
      const counts = { up: 0, down: 0 };
      for (const rating of ratings.values()) counts[rating] += 1;
      sendJson(res, 200, {
        conversation: conversationView(conversation, counts),
        ...(page && { olderBefore: page.olderBefore }),
        events: events.map((event) => {
          const parts = deliveries.get(event.seq);
          const rating = ratings.get(event.seq);
          return { seq: event.seq, at: new Date(event.at).toISOString(), message: event.message, ...(parts ? { delivery: deliveryView(parts) } : {}), ...(rating && { rating }) };
        }),
      });
    }),
  );
  routes.add(
    "GET",
    "/v1/team/conversations/:id/handoff-notices",
    guarded(async (_req, res, params, member) => {
      const conversation = await ownConversation(params.id!, member);
      if (!conversation) return notFound(res);
      sendJson(res, 200, { notices: (await engine.handoffNotices(conversation.id)).map(noticeView) });
    }),
  );
  routes.add(
    "POST",
    "/v1/team/conversations/:id/takeover",
    guarded(change(emptySchema, async (_input, conversation, res, member) => answer(res, await engine.takeOver(conversation.id, member.name)))),
  );
  routes.add(
    "POST",
    "/v1/team/conversations/:id/messages",
    guarded(change(messageSchema, async (input, conversation, res, member) => answer(res, await engine.teamMessage(conversation.id, member.name, input.text)))),
  );
  routes.add(
    "POST",
    "/v1/team/conversations/:id/release",
    guarded(change(emptySchema, async (_input, conversation, res, member) => answer(res, await engine.handBack(conversation.id, member.name)))),
  );
  if (evals) registerEvalRoutes(routes, evals, guarded, body);
  routes.add(
    "GET",
    "/v1/team/follow-ups",
    guarded(async (_req, res, _params, member) => {
      // Also the messages that never reached their customer (outside a messaging window, refused for good).
      const undelivered: Array<Record<string, unknown>> = [];
      for (const message of await engine.undelivered()) {
        if (await ownConversation(message.conversationId, member)) undelivered.push({ ...message, at: new Date(message.at).toISOString() });
      }
      sendJson(res, 200, { writes: (await engine.followUps(member.workspaceId)).map(followUpView), undelivered });
    }),
  );
  routes.add(
    "GET",
    "/v1/team/audit",
    guarded(async (req, res, _params, member) => {
      // The workspace's audit: changes to secrets, members, served releases and follow-up outcomes, oldest first.
      const url = new URL(req.url ?? "/", "http://gateway");
      const after = Number(url.searchParams.get("after") ?? "0");
      if (!Number.isSafeInteger(after) || after < 0) return sendError(res, 400, { code: "after_invalid", path: "after", message: `after is a whole number from 0 to ${Number.MAX_SAFE_INTEGER} (the last id read)` });
      const events = await engine.audit(member.workspaceId, { after, limit: 500 });
      sendJson(res, 200, { events: events.map((event) => ({ ...event, at: new Date(event.at).toISOString() })) });
    }),
  );
  return { guarded, body };
}

export type Guard = (handler: TeamHandler) => (req: IncomingMessage, res: ServerResponse, params: Record<string, string>) => Promise<void>;
export type BodyReader = <T>(req: IncomingMessage, res: ServerResponse, schema: z.ZodType<T>, maxBytes?: number) => Promise<T | undefined>;

/**
 * Evaluations on the server (eval/evalService.ts): a served tool version's fixtures on this server's sandbox
 * with write tools skipped, and background runs of a release's eval cases, each in stores of its own.
 */
function registerEvalRoutes(routes: RouteTable, evals: EvalService, guarded: Guard, body: BodyReader): void {
  routes.add(
    "POST",
    "/v1/team/evals/fixtures",
    guarded(async (req, res, _params, member) => {
      const input = await body(req, res, fixturesSchema);
      if (!input) return;
      const ran = await evals.runFixtures(input.packageVersionId, member.workspaceId);
      if (ran.ok) sendJson(res, 200, ran.report);
      else sendError(res, ran.status, ran.error);
    }),
  );
  routes.add(
    "POST",
    "/v1/team/evals/runs",
    guarded(async (req, res, _params, member) => {
      // The cases file's own limit, plus room for the JSON around it.
      const input = await body(req, res, evalRunSchema, EVAL_CASES_MAX_BYTES * 2 + 1024);
      if (!input) return;
      const started = await evals.start(input, member.workspaceId);
      if (started.ok) sendJson(res, 202, { run: started.run });
      else if (started.errors) sendJson(res, started.status, { error: started.error, errors: started.errors });
      else sendError(res, started.status, started.error);
    }),
  );
  routes.add("GET", "/v1/team/evals/runs", guarded((_req, res, _params, member) => sendJson(res, 200, { runs: evals.list(member.workspaceId) })));
  routes.add(
    "GET",
    "/v1/team/evals/runs/:id",
    guarded((_req, res, params, member) => {
      const run = evals.run(params.id!, member.workspaceId);
      if (run) sendJson(res, 200, { run });
      else sendError(res, 404, { code: "eval_run_not_found", path: "id", message: "no such eval run on this server (runs are kept in memory, the latest 20)" });
    }),
  );
}
