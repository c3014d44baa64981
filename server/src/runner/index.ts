// The runner's public surface: the ToolRunner interface and its implementation, the log store, the
// fixture format, the sandbox's status, and in-memory targets (MCP servers in this process). Everything
// else in this folder is private to it.
export type * from "./api.ts";
export { CaploToolRunner, RunnerError, type RunnerOptions, type Session, type Target } from "./toolRunner.ts";
export { JsonlLogStore, MemoryLogStore, DEFAULT_LOG_FILE, type InvocationRecord, type LogStore } from "./logStore.ts";
export { probeIsolation, type SandboxMode } from "./sandbox.ts";
export { findNode24 } from "./node24.ts";
export { mapWriteResult, mapStatusResult, mapEffectMeta } from "./outcomeMapping.ts";
export { MemoryTargets, memoryVersion, type MemoryRequest } from "./memoryTarget.ts";
