// The runner's operator settings from the one configuration: what `caplo serve`, `caplo demo` and the
// tool commands pass to CaploToolRunner (the runner itself reads no environment). The weak sandbox is
// not among them: only `caplo tool test` passes it (CAPLO_SANDBOX=weak), and `caplo serve` refuses it.
import type { BuildOptions } from "../build/buildPackage.ts";
import type { Config } from "../config/index.ts";
import { remoteTargetKind } from "../remote/remoteTarget.ts";
import type { RunnerOptions } from "../runner/toolRunner.ts";

export function runnerSettings(config: Config): RunnerOptions {
  return {
    ...buildSettings(config),
    ...(config.CAPLO_EGRESS_RESOLVE !== undefined && { egressResolve: config.CAPLO_EGRESS_RESOLVE }),
    ...(config.CAPLO_EXTRA_CA_CERTS !== undefined && { extraCaCerts: config.CAPLO_EXTRA_CA_CERTS }),
    // Remote MCP server versions are a kind of target the runner is given here (it imports no remote code).
    targetKinds: [remoteTargetKind({ allowPrivateNetwork: config.CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK })],
  };
}

/**
 * What a build (listing a package's tools in the call sandbox) takes of the runner's settings: the Node 24
 * binary (a CAPLO_NODE24 that is not there is refused with node24_missing) and whether cgroups are off.
 */
export function buildSettings(config: Config): Pick<BuildOptions, "node" | "cgroups"> {
  return {
    ...(config.CAPLO_NODE24 && { node: config.CAPLO_NODE24 }),
    ...(config.CAPLO_CGROUPS === "off" && { cgroups: false }),
  };
}
