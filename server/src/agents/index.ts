// Agents and releases: reading agent.yaml, publishing immutable releases, and keeping them.
export { parseAgentYaml, loadAgentFile, checkAgent, AGENT_FILE_MAX_BYTES, type AgentFileResult } from "./agentFile.ts";
export { createRelease, releaseHash, verifyRelease, canonicalJson, type ReleaseResult } from "./release.ts";
export { FileReleaseStore, ReleaseStoreError, type ReleaseStore } from "./releaseStore.ts";
export { agentJsonSchema, agentJsonSchemaText, AGENT_SCHEMA_ID } from "./agentSchema.ts";
