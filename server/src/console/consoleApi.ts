// The team console's routes (docs/console.md): sign in with a member's token for a session cookie, sign out,
// the inbox's summaries, a conversation's whole record (events, each write's ledger, tool invocations,
// internal notes, the model and the release), internal notes, recording a follow-up write's real outcome,
// releases with their pins and tool policies, and the team lead's numbers. Every route but sign-in goes
// through the team API's guard, so a session sees exactly what the member's token would. The console's
// built pages are served at /console (console/dist).
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import type { Engine } from "../engine/engine.ts";
import { workspaceOf, type AgentRelease, type ReleaseSource } from "../engine/release.ts";
import type { LogStore } from "../runner/logStore.ts";
import type { ConversationRecord, StoredEvent, WriteRecord, WriteTransition } from "../store/store.ts";
import { readJson, sendError, sendJson, type RouteTable } from "../gateway/http.ts";
import { conversationChange, conversationInWorkspace, conversationNotFound, TEAM_API_DISABLED, type BodyReader, type Guard } from "../gateway/teamApi.ts";
import type { TeamDirectory } from "../members/index.ts";
import { ConsoleSessions, memberRef } from "./sessions.ts";
import { eventsBefore, eventView, INBOX_MAX, iso, SEARCH_MAX, searchInbox, summaryOf } from "./inbox.ts";
import { toolView } from "./toolView.ts";
import { storableText } from "../store/storableJson.ts";

export type ConsoleOptions = {
  engine: Engine;
  releases: ReleaseSource;
  /** The team's members, configured and managed in the store (members/teamDirectory.ts). */
  team: TeamDirectory;
  sessions: ConsoleSessions;
  ownOrigins: () => ReadonlySet<string>;
  /** The client's address, for the sign-in rate limit. */
  address: (req: IncomingMessage) => string;
  /** This node's invocation records (log lines with secrets already redacted by the runner). */
  logStore?: LogStore;
  /** The model a release's turns use; default its agent.yaml model, else "the server's default model". */
  modelOf?: (release: AgentRelease) => string;
};

const signInSchema = z.strictObject({ token: z.string().min(1).max(512) });
const readSchema = z.strictObject({ seq: z.int().min(0).max(Number.MAX_SAFE_INTEGER) });
// Notes are kept as both stores can hold them: a NUL or lone surrogate as U+FFFD (storableText).
const noteSchema = z.strictObject({ text: z.string().trim().min(1).max(4000).transform(storableText) });
const outcomeSchema = z.strictObject({ outcome: z.enum(["applied", "not_applied"]), note: z.string().trim().min(1, "say what you checked (the note is kept with the outcome)").max(2000).transform(storableText) });
function ledger(write: WriteRecord, transitions: WriteTransition[]) {
  return {
    proposalId: write.id,
    tool: write.toolRef,
    state: write.state,
    confirmation: write.confirmation,
    args: write.args,
    finalArgs: write.finalArgs,
    idempotencyKey: write.idempotencyKey,
    operationRef: write.operationRef,
    checks: write.checkCount,
    nextCheckAt: iso(write.nextCheckAt),
    followUp: write.followUp,
    result: write.result,
    subjectId: write.subjectId,
    packageVersionId: write.packageVersionId,
    node: write.nodeId,
    createdAt: iso(write.createdAt),
    updatedAt: iso(write.updatedAt),
    transitions: transitions.map((transition) => ({ at: iso(transition.at), from: transition.from, to: transition.to, note: transition.note })),
  };
}

function releaseView(release: AgentRelease, modelOf: (release: AgentRelease) => string) {
  return {
    id: release.id,
    agent: release.agent,
    model: modelOf(release),
    channels: Object.entries(release.config.channels).map(([channel, settings]) => ({ channel, queue: settings?.handoff?.queue ?? null })),
    packages: release.packages.map((pkg) => ({ id: pkg.id, name: pkg.name, type: pkg.type, contentHash: pkg.contentHash })),
    tools: release.tools.map((tool) => ({ ref: tool.ref, packageVersionId: tool.packageVersionId, ...toolView(tool), subject: tool.policy.subject?.policy ?? null })),
  };
}

export function registerConsoleApi(routes: RouteTable, options: ConsoleOptions, guarded: Guard, body: BodyReader): void {
  const { engine, sessions } = options;
  const change = conversationChange(engine, body);
  const modelOf = options.modelOf ?? ((release: AgentRelease) => release.config.model ?? "the server's default model");
  const secure = (req: IncomingMessage) => (req.headers.origin ?? "").startsWith("https://") || [...options.ownOrigins()].every((origin) => origin.startsWith("https://"));

  routes.add("POST", "/v1/team/session", async (req, res) => {
    // With the console on a port of its own, a sign-in is taken only there (its cookie counts only there).
    if (!sessions.servedHere(req)) {
      req.resume();
      return sendError(res, 404, { code: "not_found", path: "", message: "the team console signs in on its own port (CAPLO_CONSOLE_PORT)" });
    }
    // A sign-in from another site's page is refused (login CSRF), and attempts per address are limited.
    if (!options.ownOrigins().has(req.headers.origin ?? "")) {
      req.resume();
      return sendError(res, 403, { code: "origin_refused", path: "origin", message: "sign in from the console on this server" });
    }
    const allowed = await sessions.attempt(options.address(req));
    if (!allowed.ok) {
      req.resume();
      return sendError(res, 429, { code: "sign_in_rate_limited", path: "", message: `too many sign-in attempts: wait ${allowed.retryAfterSeconds} s and try again` }, { "retry-after": String(allowed.retryAfterSeconds) });
    }
    if (!(await options.team.any())) {
      req.resume();
      return sendError(res, 503, TEAM_API_DISABLED);
    }
    const read = await readJson(req, 4096);
    if (!read.ok) return sendError(res, read.status, read.error);
    const parsed = signInSchema.safeParse(read.value);
    if (!parsed.success) return sendError(res, 400, { code: "body_invalid", path: parsed.error.issues[0]!.path.join("."), message: "send { \"token\": \"<your team token>\" }" });
    const signed = await sessions.signIn(parsed.data.token, options.team);
    if (!signed) return sendError(res, 401, { code: "unauthorized", path: "token", message: "that is not a team member's token" });
    sendJson(res, 200, { member: signed.session.member, csrf: signed.session.csrf, idleSeconds: sessions.idleMs / 1000 }, { "set-cookie": ConsoleSessions.cookie(signed.cookie, secure(req), Math.round(sessions.idleMs / 1000) * 48) });
  });
  routes.add(
    "GET",
    "/v1/team/session",
    guarded(async (req, res, _params, member) => {
      const found = await sessions.fromRequest(req, options.team);
      sendJson(res, 200, { member: member.name, csrf: found?.session.csrf ?? null, idleSeconds: sessions.idleMs / 1000 });
    }),
  );
  routes.add(
    "DELETE",
    "/v1/team/session",
    guarded(async (req, res) => {
      const found = await sessions.fromRequest(req, options.team);
      if (found) await sessions.signOut(found.session);
      sendJson(res, 200, { ok: true }, { "set-cookie": ConsoleSessions.cookie("", secure(req), 0) });
    }),
  );

  routes.add(
    "GET",
    "/v1/team/inbox",
    guarded(async (req, res, _params, member) => {
      // Searched for as stored: a NUL or lone surrogate is kept as U+FFFD (storableText).
      const q = storableText((new URL(req.url ?? "/", "http://gateway").searchParams.get("q") ?? "").trim().slice(0, SEARCH_MAX));
      const ids = q ? await searchInbox(engine.consoleInbox, member.workspaceId, q) : undefined;
      const entries = ids?.length === 0 ? [] : await engine.consoleInbox.listInbox({ workspaceId: member.workspaceId, member: memberRef(member), limit: INBOX_MAX, ...(ids && { ids }) });
      sendJson(res, 200, { conversations: entries.map(summaryOf) });
    }),
  );

  routes.add(
    "POST",
    "/v1/team/conversations/:id/read",
    guarded(
      change(readSchema, async (input, conversation, res, member) => {
        // Never past what is stored: a read mark ahead of the conversation would hide its next events.
        await engine.consoleInbox.markRead(conversation.id, memberRef(member), Math.min(input.seq, conversation.lastSeq), Date.now());
        sendJson(res, 200, { ok: true });
      }),
    ),
  );

  routes.add(
    "GET",
    "/v1/team/conversations/:id/record",
    guarded(async (_req, res, params, member) => {
      const conversation = await conversationInWorkspace(engine, params.id!, member);
      if (!conversation) return conversationNotFound(res);
      const [[entry], events, writes, notes] = await Promise.all([
        engine.consoleInbox.listInbox({ workspaceId: member.workspaceId, member: memberRef(member), limit: 1, ids: [conversation.id] }),
        eventsBefore(engine.consoleInbox, conversation.id, conversation.lastSeq + 1),
        engine.writes(conversation.id),
        engine.teamNotes(conversation.id),
      ]);
      const ledgers = await Promise.all(writes.map(async (write) => ledger(write, await engine.transitions(write.id))));
      const release = options.releases.list().find((candidate) => candidate.id === conversation.releaseId) ?? options.releases.get(conversation.agent);
      sendJson(res, 200, {
        conversation: summaryOf(entry!),
        release: { id: conversation.releaseId, current: release?.id === conversation.releaseId, model: release ? modelOf(release) : null },
        events: events.events.map(eventView),
        olderBefore: events.olderBefore,
        writes: ledgers,
        notes: notes.map((note) => ({ id: note.id, member: note.member, text: note.text, at: iso(note.at) })),
      });
    }),
  );

  // The node's invocation log is a file of up to CAPLO_INVOCATION_LOG's size: read when the Tool calls tab asks, not on every poll.
  routes.add(
    "GET",
    "/v1/team/conversations/:id/invocations",
    guarded(async (_req, res, params, member) => {
      const conversation = await conversationInWorkspace(engine, params.id!, member);
      if (!conversation) return conversationNotFound(res);
      const invocations = (options.logStore?.read() ?? []).filter((record) => record.conversationId === conversation.id).slice(-100);
      sendJson(res, 200, {
        invocations: invocations.map((record) => ({ id: record.invocationId, tool: record.tool, kind: record.kind, at: record.at, durationMs: record.durationMs, isError: record.isError, outcome: record.outcome ?? null, idempotencyKey: record.idempotencyKey ?? null, logs: record.logs.slice(0, 200) })),
        invocationsKept: options.logStore !== undefined,
      });
    }),
  );

  routes.add(
    "POST",
    "/v1/team/conversations/:id/notes",
    guarded(
      change(noteSchema, async (input, conversation, res, member) => {
        const added = await engine.addTeamNote(conversation.id, member.name, input.text);
        if (!added.ok) return sendError(res, 404, added.error);
        const { note } = added;
        sendJson(res, 200, { note: { id: note.id, member: note.member, text: note.text, at: iso(note.at) } });
      }),
    ),
  );

  routes.add(
    "POST",
    "/v1/team/follow-ups/:proposalId/outcome",
    guarded(async (req, res, params, member) => {
      const input = await body(req, res, outcomeSchema);
      if (!input) return;
      const result = await engine.resolveFollowUp(params.proposalId!, member.name, input.outcome, input.note, member.workspaceId);
      if (result.ok) return sendJson(res, 200, { ok: true });
      sendError(res, result.error.code === "write_not_found" ? 404 : 409, result.error);
    }),
  );

  routes.add("GET", "/v1/team/releases", guarded((_req, res, _params, member) => sendJson(res, 200, { releases: options.releases.list().filter((release) => workspaceOf(release) === member.workspaceId).map((release) => releaseView(release, modelOf)) })));

  routes.add(
    "GET",
    "/v1/team/numbers",
    guarded(async (req, res, _params, member) => {
      const days = Number(new URL(req.url ?? "/", "http://gateway").searchParams.get("days") ?? "14");
      if (!Number.isInteger(days) || days < 1 || days > 90) return sendError(res, 400, { code: "days_invalid", path: "days", message: "days is a whole number from 1 to 90" });
      sendJson(res, 200, await numbers(engine, days, member.workspaceId));
    }),
  );
}

/** What a team lead looks at, over the latest conversations (at most 1000): per day, handoffs, writes, follow-ups, ratings. */
async function numbers(engine: Engine, days: number, workspaceId: string) {
  const now = Date.now();
  const since = now - days * 86_400_000;
  const conversations = (await engine.listConversations({ workspaceId, limit: 1000 })).filter((conversation) => conversation.createdAt >= since);
  const perDay = new Map<string, number>();
  for (let i = days - 1; i >= 0; i--) perDay.set(new Date(now - i * 86_400_000).toISOString().slice(0, 10), 0);
  const byOutcome: Record<string, number> = {};
  let handedOff = 0;
  let up = 0;
  let down = 0;
  // The follow-up backlog is every write still waiting for a person, however old its conversation.
  const unknownAges = (await engine.followUps(workspaceId)).map((write) => now - write.updatedAt);
  for (const conversation of conversations) {
    const day = new Date(conversation.createdAt).toISOString().slice(0, 10);
    perDay.set(day, (perDay.get(day) ?? 0) + 1);
    const [events, writes] = await Promise.all([engine.eventsAfter(conversation.id, 0, 1000), engine.writes(conversation.id)]);
    if (conversation.handoff || events.some((event) => event.message.type === "handoff")) handedOff++;
    for (const write of writes) {
      byOutcome[write.state] = (byOutcome[write.state] ?? 0) + 1;
    }
  }
  // Answers rated up or down by customers (the widget's thumbs, kept per event by the engine).
  for (const counts of (await engine.ratingCounts(conversations.map((conversation) => conversation.id))).values()) {
    up += counts.up;
    down += counts.down;
  }
  return {
    days,
    conversations: conversations.length,
    perDay: [...perDay].map(([day, count]) => ({ day, count })),
    handoffRate: conversations.length === 0 ? 0 : handedOff / conversations.length,
    writesByOutcome: byOutcome,
    followUps: { count: unknownAges.length, oldestSeconds: unknownAges.length ? Math.round(Math.max(...unknownAges) / 1000) : null },
    ratings: { up, down },
  };
}
