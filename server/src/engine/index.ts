// The engine's public surface: the Engine facade, its options and results, and what the gateway and the
// channels may name (the files path, the handoff tool, the notes they recognise). The parts behind the
// facade are private to this folder.
export { Engine, FILES_PATH, HANDOFF_TOOL, INTERRUPTED_NOTE, TRANSCRIPT_CACHE_MAX_CHARS, UNDELIVERED_NOTE_PREFIX } from "./engine.ts";
export type { DeliveryRecord, EngineOptions, EngineResult, EngineValue, InboundSource, OpenConversation, OpenQuestionView, ProposalView, UndeliveredMessage } from "./engine.ts";
