// The team's HTTP API (bearer token): list conversations and their events, take one over, write in it,
// hand it back, and list writes still unresolved after their last status check for follow-up.
import { z } from "zod";
import type { Engine } from "../engine/engine.ts";
import type { ConversationRecord, WriteRecord } from "../store/store.ts";
import { bearerMatches, readJson, sendError, sendJson, type RouteTable, type RouteHandler } from "./http.ts";

const BODY_MAX = 16 * 1024;
const memberSchema = z.string().min(1).max(100).regex(/^[^\u0000-\u001F\u007F<>]+$/, "a name without markup or control characters");
const takeoverSchema = z.strictObject({ member: memberSchema });
const messageSchema = z.strictObject({ member: memberSchema, text: z.string().min(1).max(4000) });

function conversationView(conversation: ConversationRecord) {
  return {
    id: conversation.id,
    agent: conversation.agent,
    channel: conversation.channel,
    handoff: conversation.handoff,
    verified: conversation.subject !== null,
    createdAt: new Date(conversation.createdAt).toISOString(),
    lastSeq: conversation.lastSeq,
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

export function registerTeamApi(routes: RouteTable, engine: Engine, token: string | undefined): void {
  const guarded = (handler: RouteHandler): RouteHandler => async (req, res, params) => {
    if (!token) return sendError(res, 503, { code: "team_api_disabled", path: "", message: "set a team token (CAPLO_TEAM_TOKEN) to use the team API" });
    if (!bearerMatches(req.headers.authorization, token)) {
      return sendError(res, 401, { code: "unauthorized", path: "authorization", message: "a valid bearer token is required" }, { "www-authenticate": 'Bearer realm="caplo-team"' });
    }
    return handler(req, res, params);
  };
  const body = async <T>(req: Parameters<RouteHandler>[0], res: Parameters<RouteHandler>[1], schema: z.ZodType<T>): Promise<T | undefined> => {
    const read = await readJson(req, BODY_MAX);
    if (!read.ok) {
      sendError(res, read.status, read.error);
      return undefined;
    }
    const parsed = schema.safeParse(read.value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      sendError(res, 400, { code: issue.code === "unrecognized_keys" ? "field_unknown" : "body_invalid", path: issue.path.map(String).join("."), message: issue.message });
      return undefined;
    }
    return parsed.data;
  };
  const answer = (res: Parameters<RouteHandler>[1], result: Awaited<ReturnType<Engine["takeOver"]>>) => {
    if (result.ok) return sendJson(res, 200, { ok: true });
    const status = result.error.code === "conversation_not_found" ? 404 : 409;
    return sendError(res, status, result.error);
  };

  routes.add(
    "GET",
    "/v1/team/conversations",
    guarded(async (req, res) => {
      const url = new URL(req.url ?? "/", "http://gateway");
      const handoff = url.searchParams.get("handoff");
      const conversations = await engine.store.listConversations({ ...(handoff !== null && { handoff: handoff === "1" || handoff === "true" }), limit: 200 });
      sendJson(res, 200, { conversations: conversations.map(conversationView) });
    }),
  );
  routes.add(
    "GET",
    "/v1/team/conversations/:id/events",
    guarded(async (req, res, params) => {
      const conversation = await engine.store.getConversation(params.id!);
      if (!conversation) return sendError(res, 404, { code: "conversation_not_found", path: "id", message: "no such conversation" });
      const after = Number(new URL(req.url ?? "/", "http://gateway").searchParams.get("after") ?? "0");
      if (!Number.isInteger(after) || after < 0) return sendError(res, 400, { code: "after_invalid", path: "after", message: "after is a whole number of at least 0" });
      const events = await engine.store.listEvents(conversation.id, after, 1000);
      sendJson(res, 200, { conversation: conversationView(conversation), events: events.map((event) => ({ seq: event.seq, at: new Date(event.at).toISOString(), message: event.message })) });
    }),
  );
  routes.add(
    "POST",
    "/v1/team/conversations/:id/takeover",
    guarded(async (req, res, params) => {
      const input = await body(req, res, takeoverSchema);
      if (input) answer(res, await engine.takeOver(params.id!, input.member));
    }),
  );
  routes.add(
    "POST",
    "/v1/team/conversations/:id/messages",
    guarded(async (req, res, params) => {
      const input = await body(req, res, messageSchema);
      if (input) answer(res, await engine.teamMessage(params.id!, input.member, input.text));
    }),
  );
  routes.add(
    "POST",
    "/v1/team/conversations/:id/release",
    guarded(async (req, res, params) => {
      const input = await body(req, res, takeoverSchema);
      if (input) answer(res, await engine.handBack(params.id!, input.member));
    }),
  );
  routes.add(
    "GET",
    "/v1/team/follow-ups",
    guarded(async (_req, res) => {
      // Also the messages that never reached their customer (outside a messaging window, refused for good).
      const undelivered = (await engine.undelivered()).map((u) => ({ ...u, at: new Date(u.at).toISOString() }));
      sendJson(res, 200, { writes: (await engine.followUps()).map(followUpView), undelivered });
    }),
  );
}
