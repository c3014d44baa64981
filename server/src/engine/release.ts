// What the engine needs of an agent release, and where it gets releases from. The shape is a structural
// subset of the published `Release` in @caplo/shared (agent.ts), so a published release is used as is;
// `releaseFromVersions` builds one in memory from built package versions (tests, the offline demo).
import { createHash } from "node:crypto";
import { DEFAULT_WORKSPACE, modelToolName, parseWorkspaceRef, workspaceRef, type ChannelKind, type IdentitySettings, type PackageVersion, type ToolPolicy, type WidgetSettings } from "@caplo/shared";

/** agent.yaml `channels.<channel>.handoff`: the team queue and what the customer is told (where the queue's notices go is the operator's CAPLO_HANDOFF_WEBHOOK_URL). */
export type HandoffDestination = { queue: string; message?: string };

export type EngineTool = {
  /** `package/tool`. */
  ref: string;
  package: string;
  tool: string;
  /** `<package>__<tool>`: what the model sees. */
  modelName: string;
  packageVersionId: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  policy: ToolPolicy;
  hasStatus: boolean;
};

export type AgentRelease = {
  id: string;
  agent: string;
  /** The workspace serving the release (where its conversations, secrets and team belong); default `default`. */
  workspaceId?: string;
  config: {
    instructions: string;
    /** The agent's model override, `provider/model` (for example openai/gpt-4.1-mini). */
    model?: string;
    origins: string[];
    channels: Partial<Record<ChannelKind, { handoff?: HandoffDestination } | undefined>>;
    identity?: IdentitySettings;
    greeting?: string;
    locale?: string;
    widget?: WidgetSettings;
  };
  /** The pinned package versions, whole: what the runner loads. */
  packages: PackageVersion[];
  tools: EngineTool[];
};

/** The workspace of a release: its own, or `default`. */
export function workspaceOf(release: Pick<AgentRelease, "workspaceId">): string {
  return release.workspaceId ?? DEFAULT_WORKSPACE;
}

/**
 * How an agent is addressed (data-agent, hello, --agent): its name in the default workspace, else
 * `<workspace>/<agent>`. Names are unique within a workspace, so the reference is unique on the server.
 */
export function agentRef(workspaceId: string, agent: string): string {
  return workspaceRef(workspaceId, agent);
}

/** An agent reference split into its workspace and name (no check of the parts' patterns). */
export function parseAgentRef(ref: string): { workspaceId: string; agent: string } {
  const { workspaceId, name } = parseWorkspaceRef(ref);
  return { workspaceId, agent: name };
}

/** Where the gateway and engine look agents up by reference (agentRef): the current release of each. */
export interface ReleaseSource {
  get(agentRef: string): AgentRelease | undefined;
  list(): AgentRelease[];
}

/** A fixed set of releases held in memory. */
export class StaticReleases implements ReleaseSource {
  private readonly releases = new Map<string, AgentRelease>();
  constructor(releases: AgentRelease[]) {
    for (const release of releases) this.releases.set(agentRef(workspaceOf(release), release.agent), release);
  }
  get(ref: string): AgentRelease | undefined {
    return this.releases.get(ref);
  }
  list(): AgentRelease[] {
    return [...this.releases.values()];
  }
  /** Publish a newer release of an agent (new conversations use it). */
  set(release: AgentRelease): void {
    this.releases.set(agentRef(workspaceOf(release), release.agent), release);
  }
}

export type InMemoryReleaseInput = {
  agent: string;
  workspaceId?: string;
  instructions: string;
  origins?: string[];
  channels?: AgentRelease["config"]["channels"];
  identity?: IdentitySettings;
  greeting?: string;
  widget?: WidgetSettings;
  versions: PackageVersion[];
  /** `package/tool` refs to offer; default every tool of every version. */
  tools?: string[];
};

/** An in-memory release from built package versions, with a content-derived id. */
export function releaseFromVersions(input: InMemoryReleaseInput): AgentRelease {
  const tools: EngineTool[] = [];
  for (const version of input.versions) {
    for (const built of version.tools) {
      const ref = `${version.name}/${built.name}`;
      if (input.tools && !input.tools.includes(ref)) continue;
      tools.push({
        ref,
        package: version.name,
        tool: built.name,
        modelName: modelToolName(version.name, built.name),
        packageVersionId: version.id,
        description: built.description,
        inputSchema: built.inputSchema,
        ...(built.outputSchema && { outputSchema: built.outputSchema }),
        policy: built.policy,
        hasStatus: built.hasStatus,
      });
    }
  }
  const config: AgentRelease["config"] = {
    instructions: input.instructions,
    origins: input.origins ?? [],
    channels: input.channels ?? { web: {} },
    ...(input.identity && { identity: input.identity }),
    ...(input.greeting && { greeting: input.greeting }),
    ...(input.widget && { widget: input.widget }),
  };
  const hash = createHash("sha256")
    .update(JSON.stringify({ config, versions: input.versions.map((version) => version.id), tools: tools.map((tool) => tool.ref) }))
    .digest("hex");
  return { id: `${input.agent}@sha256:${hash}`, agent: input.agent, ...(input.workspaceId && { workspaceId: input.workspaceId }), config, packages: input.versions, tools };
}

export function findTool(release: AgentRelease, modelName: string): EngineTool | undefined {
  return release.tools.find((tool) => tool.modelName === modelName);
}
