// The runner's operator settings from the one configuration: what `caplo serve`, `caplo demo` and the
// tool commands pass to CaploToolRunner (the runner itself reads no environment). The weak sandbox is
// not among them: only `caplo tool test` passes it (CAPLO_SANDBOX=weak), and `caplo serve` refuses it.
import type { Config } from "../config/index.ts";
import { findNode24 } from "../runner/node24.ts";
import type { RunnerOptions } from "../runner/toolRunner.ts";

export function runnerSettings(config: Config): RunnerOptions {
  // A CAPLO_NODE24 that is not there is left to the runner, which refuses to load with node24_missing.
  const node24 = config.CAPLO_NODE24 ? findNode24({ CAPLO_NODE24: config.CAPLO_NODE24 }) : undefined;
  return {
    ...(node24?.ok && { node: node24.path }),
    ...(config.CAPLO_CGROUPS === "off" && { cgroups: false }),
    ...(config.CAPLO_EGRESS_RESOLVE !== undefined && { egressResolve: config.CAPLO_EGRESS_RESOLVE }),
    ...(config.CAPLO_EXTRA_CA_CERTS !== undefined && { extraCaCerts: config.CAPLO_EXTRA_CA_CERTS }),
    allowPrivateRemote: config.CAPLO_REMOTE_ALLOW_PRIVATE_NETWORK,
  };
}
