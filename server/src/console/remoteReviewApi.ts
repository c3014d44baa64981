// The remote MCP review in the team console (docs/console.md, "Remote MCP servers"): connect a server by
// URL and list its tools for review, publish the reviewed set as an immutable version kept in the member's
// workspace (audited: who and when), list the workspace's versions, and check one for drift. It is what
// `caplo remote list/review/publish/check` do, through the same functions (server/src/remote): the URL
// passes the same network rule before anything is sent (https, a host name that resolves to no private,
// loopback or link-local address, no redirect to another origin; only CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK
// lifts it), every connection is checked again at connect time (remote/remoteFetch.ts), and the authorization header's value comes from the workspace's secret store by name.
import type { ServerResponse } from "node:http";
import { basename } from "node:path";
import { z } from "zod";
import type { Engine } from "../engine/engine.ts";
import { sendError, sendJson, type RouteTable } from "../gateway/http.ts";
import type { BodyReader, Guard } from "../gateway/teamApi.ts";
import type { TeamMember } from "../gateway/teamMembers.ts";
import {
  checkReview,
  driftOf,
  keepRemoteVersion,
  listRemote,
  mergeReview,
  newReview,
  publishRemote,
  readRemoteVersions,
  reviewOfVersion,
  schemaHash,
  type RemoteEndpoint,
  type RemoteListing,
  type RemoteResolve,
  type RemoteVersion,
} from "../remote/index.ts";
import { PACKAGE_NAME_PATTERN, SECRET_NAME_PATTERN } from "@caplo/shared";
import { toolView } from "./toolView.ts";

export type RemoteReviewOptions = {
  engine: Pick<Engine, "recordAudit" | "lastAudit">;
  /** The folder a workspace's published remote versions are kept in (beside its releases: `remote/`). */
  versionsDir: (workspaceId: string) => string;
  /** Operator-only (CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK): http and private or loopback addresses may be reached. */
  allowPrivateNetwork: boolean;
  /** The resolver for the URL check and every connection (default: the system's); tests of the address rule replace it. */
  resolve?: RemoteResolve;
  /** A workspace secret's value by name (the authorization header's). */
  secret: (name: string, workspaceId: string) => string | undefined | Promise<string | undefined>;
};

const URL_MAX = 2000;
const listSchema = z.strictObject({
  url: z.string().trim().min(1).max(URL_MAX),
  name: z.string().regex(PACKAGE_NAME_PATTERN, "a name of lowercase letters, digits and dashes, starting with a letter, 2 to 40 characters"),
  authorizationSecret: z.string().regex(SECRET_NAME_PATTERN, "a secret's name: capital letters, digits and underscores").optional(),
});
/** The review is checked by the review file's own schema (checkReview), not by this one. */
const publishSchema = z.strictObject({ review: z.unknown() });
const REVIEW_BODY_MAX = 256 * 1024;

const versionNotFound = (res: ServerResponse) => sendError(res, 404, { code: "remote_version_not_found", path: "id", message: "no such remote version in your workspace" });

/** A version as the console shows it, with who published it (from the workspace's audit). */
function versionView(version: RemoteVersion, publishedBy: string | null) {
  return {
    id: version.id,
    name: version.name,
    url: version.url,
    transport: version.transport ?? null,
    authorizationSecret: version.authorizationSecret ?? null,
    publishedAt: version.publishedAt,
    publishedBy,
    unpublished: version.unpublished,
    tools: version.tools.map((tool) => ({ name: tool.name, modelName: tool.modelName, ...toolView(tool) })),
  };
}

/** The listed tools as the review shows them: description and schemas exactly as the server sent them, and their hash. */
function listedView(listing: RemoteListing) {
  return listing.tools.map((tool) => ({ name: tool.name, description: tool.description ?? "", inputSchema: tool.inputSchema, outputSchema: tool.outputSchema ?? null, schemaHash: schemaHash(tool) }));
}

export function registerRemoteReviewApi(routes: RouteTable, options: RemoteReviewOptions, guarded: Guard, body: BodyReader): void {
  const versions = async (member: TeamMember) => (await readRemoteVersions(options.versionsDir(member.workspaceId))).versions.map((kept) => kept.version);
  const publishedBy = async (member: TeamMember, id: string) => (await options.engine.lastAudit(member.workspaceId, "remote.published", id))?.actor ?? null;

  /** The endpoint for a URL, with the named secret's value from the member's workspace; a problem when it has none. */
  const endpointFor = async (member: TeamMember, url: string, secret: string | undefined, transport?: RemoteEndpoint["transport"]) => {
    const endpoint: RemoteEndpoint = { url, ...(options.allowPrivateNetwork && { allowPrivateNetwork: true }), ...(transport && { transport }), ...(options.resolve && { resolve: options.resolve }) };
    if (secret === undefined) return { ok: true as const, endpoint };
    const value = await options.secret(secret, member.workspaceId);
    if (value === undefined) return { ok: false as const, error: { code: "secret_missing", path: "authorizationSecret", message: `the secret ${secret} has no value in your workspace: set it with caplo secret set ${secret}` } };
    return { ok: true as const, endpoint: { ...endpoint, authorization: value } };
  };
  /** Lists the server; answers the failure (400 for the URL or the secret, 502 for the server) and returns undefined. */
  const list = async (res: ServerResponse, member: TeamMember, url: string, secret: string | undefined, transport?: RemoteEndpoint["transport"]) => {
    const found = await endpointFor(member, url, secret, transport);
    if (!found.ok) return void sendError(res, 400, found.error);
    const listed = await listRemote(found.endpoint);
    if (listed.ok) return listed.listing;
    // remote_address_private: the host passed the URL rule, then resolved to a private address when connecting.
    const refusedUrl = listed.error.code.startsWith("remote_url_") || listed.error.code === "remote_address_private";
    sendError(res, refusedUrl ? 400 : 502, listed.error);
    return undefined;
  };

  routes.add(
    "GET",
    "/v1/team/remote/versions",
    guarded(async (_req, res, _params, member) => {
      const kept = await versions(member);
      sendJson(res, 200, { versions: await Promise.all(kept.map(async (version) => versionView(version, await publishedBy(member, version.id)))) });
    }),
  );

  // Listing is a request to another server: POST, so a page of another site can never make a member's browser ask for it.
  routes.add(
    "POST",
    "/v1/team/remote/list",
    guarded(async (req, res, _params, member) => {
      const input = await body(req, res, listSchema);
      if (!input) return;
      const listing = await list(res, member, input.url, input.authorizationSecret);
      if (!listing) return;
      // A name published before from the same URL starts from that review: decisions kept, changed tools asked again.
      const previous = (await versions(member)).find((version) => version.name === input.name && version.url === input.url);
      let review = newReview(input.name, input.url, listing.tools, input.authorizationSecret, listing.transport);
      if (previous) {
        const { authorizationSecret: _secretBefore, ...decided } = reviewOfVersion(previous);
        review = mergeReview({ ...decided, transport: listing.transport, ...(input.authorizationSecret && { authorizationSecret: input.authorizationSecret }) }, listing.tools).review;
      }
      sendJson(res, 200, { review, listed: listedView(listing), transport: listing.transport, previous: previous ? { id: previous.id, drift: driftOf(previous, listing.tools) } : null });
    }),
  );

  routes.add(
    "POST",
    "/v1/team/remote/publish",
    guarded(async (req, res, _params, member) => {
      const input = await body(req, res, publishSchema, REVIEW_BODY_MAX);
      if (!input) return;
      const checked = checkReview(input.review);
      if (!checked.ok) return sendJson(res, 400, { error: checked.errors[0], errors: checked.errors });
      const { review } = checked;
      // Listed again now: a tool that changed since it was reviewed is refused (remote_tool_changed).
      const listing = await list(res, member, review.url, review.authorizationSecret, review.transport);
      if (!listing) return;
      const published = publishRemote(review, listing.tools, new Date(), listing.facts);
      if (!published.ok) return sendJson(res, 409, { error: published.errors[0], errors: published.errors });
      // The same reviewed content published again is the version kept before (its id is its content's hash).
      const already = (await versions(member)).find((kept) => kept.id === published.version.id);
      const version = already ?? published.version;
      const file = keepRemoteVersion(options.versionsDir(member.workspaceId), version);
      if (!already) {
        await options.engine.recordAudit({
          workspaceId: member.workspaceId,
          at: Date.parse(version.publishedAt),
          actor: member.name,
          action: "remote.published",
          target: version.id,
          detail: { name: version.name, url: version.url, tools: version.tools.map((tool) => `${tool.name}:${tool.policy.effect}`), unpublished: version.unpublished },
        });
      }
      sendJson(res, already ? 200 : 201, { version: versionView(version, await publishedBy(member, version.id)), file, fileName: basename(file), skipped: published.skipped, created: !already });
    }),
  );

  // Also a request to another server (with the version's authorization secret): POST, as listing is, so it
  // needs the console's CSRF header and no page of another site can make a member's browser ask for it.
  routes.add(
    "POST",
    "/v1/team/remote/versions/:id/drift",
    guarded(async (_req, res, params, member) => {
      // Only the member's own workspace's folder is read: another workspace's version is one that does not exist.
      const version = (await versions(member)).find((kept) => kept.id === params.id);
      if (!version) return versionNotFound(res);
      const listing = await list(res, member, version.url, version.authorizationSecret, version.transport);
      if (!listing) return;
      sendJson(res, 200, { id: version.id, drift: driftOf(version, listing.tools), listed: listedView(listing), checkedAt: new Date().toISOString() });
    }),
  );
}
