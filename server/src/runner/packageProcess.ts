// One warm package process: a sandboxed Node 24 child serving the package over stdio, its egress
// socket, and the MCP client the runner calls it through (routedClient.ts: log notifications and
// elicitation requests are routed to the call they belong to).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ChildTransport } from "./childTransport.ts";
import { openEgressSocket, type EgressEvent, type EgressSocket } from "./egressProxy.ts";
import { routedClient, type CallRoute } from "./routedClient.ts";
import type { ResolveOverride } from "./egressRule.ts";
import { createSandboxGroup, type SandboxGroup } from "./cgroup.ts";
import { killSandbox, spawnSandboxed, type SandboxMode, type SandboxProcess } from "./sandbox.ts";
import { processTreeCpuMs } from "./processCpu.ts";

export type ProcessOptions = {
  /** For messages: which version this process serves. */
  label: string;
  node: string;
  mode: SandboxMode;
  /** Module and arguments: [host.ts or the host bundle's launcher.mjs, packageDir]. */
  script: string[];
  /** The egress preload (default sandboxPreload.ts). */
  preload?: string;
  readPaths: string[];
  egress: readonly string[];
  overrides: readonly ResolveOverride[];
  memoryMb: number;
  /** Operator-only extra certificate authorities for the package's TLS (see SandboxSpec.extraCaCerts). */
  extraCaCerts?: string;
  /**
   * The whole process's memory cap in MiB (heap, Buffers, code), enforced by a control group where the
   * runner has cgroups and the sandbox is isolated; undefined: no group (the heap cap only).
   */
  processMemoryMb?: number;
  /** Processes and threads the sandbox may have at once (with processMemoryMb). */
  pidsMax?: number;
  startTimeoutMs: number;
  /** Largest single message accepted from the package (default MESSAGE_BYTES_MAX); over it the process is killed. */
  messageBytesMax?: number;
  /** How long each look at the process's CPU between calls lasts (default IDLE_CPU_WINDOW_MS). */
  idleCpuWindowMs?: number;
  /** A tunnel opened or refused while no call of this process is in flight (its calls see those during them). */
  onEgressBetweenCalls?: (event: EgressEvent) => void;
};

/** A package process that could not start: why, and the SDK host's own report when it gave one. */
export class ProcessStartError extends Error {
  readonly hostError: { code: string; message: string } | undefined;
  constructor(message: string, hostError?: { code: string; message: string }) {
    super(message);
    this.hostError = hostError;
  }
}

const STDERR_KEEP = 16 * 1024;
/** How long a failed start waits for the rest of the process's stderr after it exited. */
const STDERR_DRAIN_MS = 1000;
/**
 * Between calls a package process may use at most this share of one core, looked at over each
 * IDLE_CPU_WINDOW_MS in which no request was made and none was waiting: a package that keeps computing
 * after its call has answered (or after its call timed out while it still answers pings) takes the
 * server's CPU from every customer, with no call to end it. Past it the process is stopped; the next call
 * starts a fresh one.
 */
export const IDLE_CPU_SHARE = 0.25;
export const IDLE_CPU_WINDOW_MS = 5000;
export class PackageProcess {
  readonly client: Client;
  readonly options: ProcessOptions;
  readonly routes: Map<string, CallRoute>;
  stderr = "";
  exited = false;
  exitReason = "";
  lastUsed = Date.now();
  /**
   * Handed out by the pool and not yet carrying its call's route: busy until the next macrotask (the
   * runner registers the route in the microtasks that follow), so it is not stopped to make room.
   */
  claims = 0;
  private sandbox?: SandboxProcess;
  private group?: SandboxGroup;
  private groupRemoved?: Promise<void>;
  private egressSocket?: EgressSocket;
  private readonly exitListeners: Array<() => void> = [];
  /** Set when the package sent a message over the transport's cap (the transport then kills it). */
  private oversized: string | undefined;
  private idleWatch: NodeJS.Timeout | undefined;
  private lastLook: { at: number; cpuMs: number | undefined; idle: boolean; requests: number } | undefined;

  private constructor(options: ProcessOptions) {
    this.options = options;
    ({ client: this.client, routes: this.routes } = routedClient());
  }

  static async start(options: ProcessOptions): Promise<PackageProcess> {
    const process = new PackageProcess(options);
    try {
      await process.boot();
    } catch (error) {
      await process.kill();
      throw error;
    }
    return process;
  }

  private async boot(): Promise<void> {
    this.egressSocket = await openEgressSocket({
      egress: this.options.egress,
      overrides: this.options.overrides,
      onEvent: (event) => {
        // The proxy cannot tell which call opened a tunnel; report to every call in flight, or, with none in
        // flight, as the package's own use of the network between calls.
        if (this.routes.size === 0) this.options.onEgressBetweenCalls?.(event);
        for (const route of this.routes.values()) route.onEgress(event);
      },
    });
    if (this.options.mode === "isolated" && this.options.processMemoryMb !== undefined) {
      this.group = createSandboxGroup(this.options.processMemoryMb * 1024 * 1024, this.options.pidsMax ?? 128);
    }
    this.sandbox = spawnSandboxed({
      node: this.options.node,
      mode: this.options.mode,
      readPaths: this.options.readPaths,
      egressDir: this.egressSocket.dir,
      egressSocket: this.egressSocket.socketPath,
      memoryMb: this.options.memoryMb,
      script: this.options.script,
      ...(this.options.preload && { preload: this.options.preload }),
      ...(this.options.extraCaCerts && { extraCaCerts: this.options.extraCaCerts }),
      ...(this.group && { cgroupProcs: this.group.procsFiles }),
    });
    const child = this.sandbox.child;
    const transport = new ChildTransport(
      child,
      (line) => {
        this.stderr = (this.stderr + `[stdout] ${line}\n`).slice(-STDERR_KEEP);
      },
      this.options.messageBytesMax,
    );
    child.stderr!.on("data", (chunk: Buffer) => {
      // Read on the server's thread too: it counts against the same bounds as stdout.
      if (!transport.count(chunk.length, "stderr")) return;
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_KEEP);
    });
    // 'exit' may come before the last of stderr is read (a host that prints why it cannot serve and exits at
    // once): the start's failure waits for stderr's end, at most STDERR_DRAIN_MS, so its reason is in the message.
    const stderrEnded = new Promise<void>((resolve) => {
      child.stderr!.once("end", resolve);
      child.stderr!.once("close", resolve);
    });
    child.once("exit", (code, signal) => {
      this.exited = true;
      clearInterval(this.idleWatch);
      this.exitReason = signal ? `killed by ${signal}` : `exited with code ${code}`;
      // The memory cgroup's OOM killer kills the package itself (the launcher then exits non-zero).
      if (this.group?.memoryExceeded()) this.exitReason = `was killed for going over its memory limit (${Math.round(this.group.memoryBytes / 1048576)} MiB)`;
      else if (this.oversized) this.exitReason = `was stopped: it ${this.oversized}`;
      this.groupRemoved = this.group?.remove();
      this.sandbox?.cleanup();
      void this.egressSocket?.close();
      for (const listener of this.exitListeners) listener();
    });
    this.client.onerror = (error) => {
      if (/^package (sent a message over|wrote )/.test(error.message)) this.oversized = error.message.replace(/^package /, "");
    };
    const exitedEarly = new Promise<never>((_, reject) =>
      this.onExit(async () => {
        let drained: NodeJS.Timeout | undefined;
        await Promise.race([stderrEnded, new Promise((resolve) => (drained = setTimeout(resolve, STDERR_DRAIN_MS)))]);
        clearTimeout(drained);
        // The SDK's host reports why it could not serve as one line: caplo-host-error {"code","message"}.
        const hostLine = /caplo-host-error (\{.*\})/.exec(this.stderr)?.[1];
        let hostError: { code: string; message: string } | undefined;
        if (hostLine) {
          try {
            const parsed = JSON.parse(hostLine) as { code?: unknown; message?: unknown };
            hostError = { code: String(parsed.code), message: String(parsed.message) };
          } catch {
            // keep the raw stderr
          }
        }
        const detail = hostError ? `${hostError.code}: ${hostError.message}` : this.stderr.trim().slice(-2000);
        reject(new ProcessStartError(`package ${this.options.label} ${this.exitReason} during start: ${detail}`, hostError));
      }),
    );
    exitedEarly.catch(() => undefined);
    const connected = this.client.connect(transport, { timeout: this.options.startTimeoutMs }).catch((error: unknown) => {
      if (this.exited) return exitedEarly;
      throw new ProcessStartError(`package ${this.options.label} did not start within ${this.options.startTimeoutMs} ms (${(error as Error).message}): ${this.stderr.trim().slice(-1000)}`);
    });
    await Promise.race([connected, exitedEarly]);
    this.idleWatch = setInterval(() => this.lookWhileIdle(transport), this.options.idleCpuWindowMs ?? IDLE_CPU_WINDOW_MS);
    this.idleWatch.unref();
  }

  /** Stops the process if it used over IDLE_CPU_SHARE of a core since the last look, idle all along. */
  private lookWhileIdle(transport: ChildTransport): void {
    const pid = this.sandbox?.child.pid;
    if (this.exited || pid === undefined) return;
    const look = { at: performance.now(), cpuMs: processTreeCpuMs(pid), idle: !transport.waiting, requests: transport.requestsSent };
    const last = this.lastLook;
    this.lastLook = look;
    if (!last || last.cpuMs === undefined || look.cpuMs === undefined || !last.idle || !look.idle || last.requests !== look.requests) return;
    const used = look.cpuMs - last.cpuMs;
    const elapsed = look.at - last.at;
    if (used <= IDLE_CPU_SHARE * elapsed) return;
    this.oversized = `used ${used} ms of CPU in ${Math.round(elapsed)} ms while no call was in flight`;
    killSandbox(this.sandbox!);
  }

  onExit(listener: () => void): void {
    if (this.exited) listener();
    else this.exitListeners.push(listener);
  }

  /** The process id on this machine (of the sandbox launcher), for diagnostics. */
  get pid(): number | undefined {
    return this.sandbox?.child.pid;
  }

  async kill(): Promise<void> {
    const child = this.sandbox?.child;
    if (child && !this.exited) {
      const gone = new Promise<void>((resolve) => this.onExit(resolve));
      killSandbox(this.sandbox!);
      await gone;
      await this.groupRemoved;
    } else {
      await this.group?.remove();
      this.sandbox?.cleanup();
      await this.egressSocket?.close();
    }
    await this.client.close().catch(() => undefined);
  }
}
