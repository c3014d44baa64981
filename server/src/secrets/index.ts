// Workspace secrets: sealed at rest with the operator's key, read per call (docs/operators/workspaces.md).
export * from "./secretBox.ts";
export * from "./workspaceSecrets.ts";
