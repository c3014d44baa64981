// In-memory targets: MCP SDK servers created in this process and connected over the SDK's
// InMemoryTransport, registered with the runner as a kind of target (RunnerOptions.targetKinds). A call
// to one takes the runner's one call path as a package version's does (the subject, argument and output
// validation, the call context in `_meta`, the call clock and cancellation, questions to the visitor,
// files, result size, outcome mapping, the invocation log); only the sandbox is left out, so only code
// that is part of the program itself is served this way (the engine's and gateway's tests).
import { createHash } from "node:crypto";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { CALL_META_KEY, STATUS_METHOD, type BuiltTool, type PackageVersion } from "@caplo/shared";
import { routedClient } from "./routedClient.ts";
import type { Session, Target, TargetKind } from "./target.ts";

/** A tool call or status check as it reached an in-memory server. */
export type MemoryRequest = { kind: "call" | "status"; tool: string; args?: unknown; idempotencyKey?: string; operationRef?: string };

/** The package name of a version id `NAME@sha256:HASH` (a scoped name keeps its own leading `@`). */
function packageName(versionId: string): string {
  const at = versionId.lastIndexOf("@");
  return at > 0 ? versionId.slice(0, at) : versionId;
}

/**
 * A built version of an in-memory server's tools, `NAME@sha256:` the hash of the tools: it has no files (its
 * folder does not exist, as nothing of it is frozen or run from disk), and trusts the server's outcome metadata.
 */
export function memoryVersion(name: string, tools: BuiltTool[]): PackageVersion {
  const hash = createHash("sha256").update(JSON.stringify(tools)).digest("hex");
  return {
    id: `${name}@sha256:${hash}`,
    name,
    type: "mcp",
    contentHash: hash,
    dir: `/nonexistent/in-memory/${name}`,
    manifest: { apiVersion: "v1", kind: "ToolPackage", name, type: "mcp", entry: "src/server.ts", runtime: "node24", tests: "tests/*.json", tools: tools.map((tool) => tool.policy) },
    effectOutcomes: true,
    tools,
    builtAt: new Date(0).toISOString(),
  };
}

export class MemoryTargets implements TargetKind {
  private readonly servers: Map<string, () => McpServer>;
  /** Every tool call and status check that reached a server, in order: what its backend was asked. */
  readonly requests: MemoryRequest[] = [];

  /** `servers` maps a package name to a function creating a fresh MCP server for a version of it. */
  constructor(servers: Record<string, () => McpServer>) {
    this.servers = new Map(Object.entries(servers));
  }

  readonly loads = (versionId: string): boolean => this.servers.has(packageName(versionId));

  /** A version's target, once its server lists every tool the version was built with (as a package's must). */
  readonly load = async (version: PackageVersion): Promise<{ ok: true; target: Target } | { ok: false; error: { code: string; path: string; message: string } }> => {
    const create = this.servers.get(version.name);
    if (!create) return { ok: false, error: { code: "target_unknown", path: "/", message: `no in-memory server for package ${version.name}` } };
    const target = this.target(version, create);
    const { client } = await target.session();
    const listed = await client.listTools();
    const missing = version.tools.find((tool) => !listed.tools.some((candidate) => candidate.name === tool.name));
    if (missing) {
      await target.close();
      return { ok: false, error: { code: "tool_missing", path: `/tools/${missing.name}`, message: `package ${version.id} no longer lists tool '${missing.name}'` } };
    }
    return { ok: true, target };
  };

  private target(version: PackageVersion, create: () => McpServer): Target {
    let current: Promise<Session> | undefined;
    const open = async (): Promise<Session> => {
      const server = create();
      const { client, routes } = routedClient();
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      const send = clientSide.send.bind(clientSide);
      clientSide.send = (message, options) => {
        this.note(message);
        return send(message, options);
      };
      await server.connect(serverSide);
      await client.connect(clientSide);
      const session: Session = {
        client,
        routes,
        // A server that no longer answers is replaced: the next call connects a fresh one.
        recover: async () => {
          const alive = await client.ping({ timeout: 1000 }).then(() => true, () => false);
          if (alive) return;
          current = undefined;
          await client.close().catch(() => undefined);
        },
      };
      return session;
    };
    return {
      id: version.id,
      tools: version.tools,
      effectOutcomes: version.type === "function" || version.effectOutcomes,
      secretNames: version.manifest.secrets ?? [],
      session: () => {
        current ??= open().catch((error: unknown) => {
          current = undefined;
          throw error;
        });
        return current;
      },
      close: async () => {
        const closing = current;
        current = undefined;
        await closing?.then((session) => session.client.close(), () => undefined);
      },
    };
  }

  private note(message: JSONRPCMessage): void {
    if (!("method" in message) || (message.method !== "tools/call" && message.method !== STATUS_METHOD)) return;
    const params = (message.params ?? {}) as { name?: unknown; arguments?: unknown; operationRef?: unknown; _meta?: Record<string, unknown> };
    const meta = params._meta?.[CALL_META_KEY] as { idempotencyKey?: unknown } | undefined;
    this.requests.push({
      kind: message.method === STATUS_METHOD ? "status" : "call",
      tool: String(params.name),
      ...(message.method === "tools/call" && { args: params.arguments }),
      ...(typeof meta?.idempotencyKey === "string" && { idempotencyKey: meta.idempotencyKey }),
      ...(typeof params.operationRef === "string" && { operationRef: params.operationRef }),
    });
  }
}
