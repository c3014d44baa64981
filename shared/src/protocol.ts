// The widget ⇄ gateway WebSocket protocol, version 1. Every frame is one of these schemas; the gateway
// validates each inbound frame and answers a bad one with an error frame, keeping the connection.
import { z } from "zod";
import { inboundSchema, outboundSchema, RATINGS } from "./messages.ts";

export const PROTOCOL_VERSION = 1;

export const WS_PATH = "/v1/ws";
/**
 * The highest event seq there can be: a conversation's events are numbered 1, 2, 3 ... in a 32-bit column
 * (PostgreSQL `integer`). A seq or `after` asked for above it is refused as invalid, never sent to the store.
 */
export const EVENT_SEQ_MAX = 2_147_483_647;
/** A frame's `ref` (echoed on its ack or error): at most this many characters; a longer one is refused, never cut. */
export const FRAME_REF_MAX = 64;
const ref = z.string().max(FRAME_REF_MAX);

export const clientCapabilitiesSchema = z.object({
  forms: z.boolean().default(false),
  files: z.boolean().default(false),
  pages: z.boolean().default(false),
  questions: z.boolean().default(true),
});
export type ClientCapabilities = z.infer<typeof clientCapabilitiesSchema>;

/** Client → server. */
export const clientFrameSchema = z.discriminatedUnion("t", [
  z.object({
    t: z.literal("hello"),
    v: z.literal(PROTOCOL_VERSION),
    agent: z.string().min(1).max(100),
    capabilities: clientCapabilitiesSchema,
    locale: z.string().max(35).optional(),
    /** Resume an earlier conversation; `after` is the last event sequence the client has. */
    resume: z.object({ token: z.string().max(512), after: z.int().min(0) }).optional(),
  }),
  /** The customer's action; `ref` is echoed on the ack or error so the client can match it. */
  z.object({ t: z.literal("in"), ref, event: inboundSchema }),
  /** A signed identity token from the site owner's backend. */
  z.object({ t: z.literal("identify"), ref, token: z.string().max(8192) }),
  z.object({ t: z.literal("ping") }),
  /** Stop the reply the agent is writing now: the text so far is kept as the reply, nothing more is asked of the model. */
  z.object({ t: z.literal("stop"), ref: z.string().max(64) }),
  /** Rate the agent's reply stored as event `seq` of this conversation; a later rate replaces it, `null` takes it back. */
  z.object({ t: z.literal("rate"), ref, seq: z.int().min(1).max(EVENT_SEQ_MAX), rating: z.enum(RATINGS).nullable() }),
]);
export type ClientFrame = z.infer<typeof clientFrameSchema>;

export const errorFrameSchema = z.object({
  t: z.literal("error"),
  code: z.string(),
  message: z.string(),
  path: z.string().optional(),
  ref: z.string().optional(),
});

/** The agent as the widget presents it, from agent.yaml `widget` and the web channel's handoff. */
export const widgetAgentSchema = z.object({
  name: z.string().optional(),
  avatar: z.string().optional(),
  starters: z.array(z.string()).optional(),
  /** The web channel has a handoff destination: the widget offers "talk to a person". */
  handoff: z.boolean(),
  mapTiles: z.object({ url: z.string(), attribution: z.string() }).optional(),
});
export type WidgetAgent = z.infer<typeof widgetAgentSchema>;

/** Server → client. */
export const serverFrameSchema = z.discriminatedUnion("t", [
  z.object({
    t: z.literal("welcome"),
    v: z.literal(PROTOCOL_VERSION),
    conversationId: z.string(),
    resumeToken: z.string(),
    /** The client's identity as the server knows it, if verified. */
    verified: z.boolean(),
    /** What the widget shows of the agent (agent.yaml `widget`), and whether the visitor can ask for a person. */
    agent: widgetAgentSchema.optional(),
    /**
     * The visitor's ratings of the agent's replies in this conversation as they stand (the latest of each),
     * by event `seq`, every one whatever `after` the hello resumed from: a reload shows its thumbs pressed.
     */
    ratings: z.array(z.object({ seq: z.int().min(1), rating: z.enum(RATINGS) })).optional(),
  }),
  /**
   * Part of the agent's reply while the model writes it (not stored): `text` goes at character `at` of the
   * reply `id`. The stored event with the same message id replaces it; a client that missed a part waits for it.
   */
  z.object({ t: z.literal("delta"), id: z.string(), at: z.int().min(0), text: z.string() }),
  /** One conversation event, in order; `seq` increases by one per conversation. */
  z.object({ t: z.literal("event"), seq: z.int().min(1), at: z.string(), message: outboundSchema }),
  /**
   * The frame `ref` was accepted: a message is taken, a confirm or decline is recorded (its outcome follows
   * as events), an identity is verified. The ack of an identify carries the conversation's new resume token:
   * the one from before is no longer valid, so a token handed out before sign-in cannot resume it.
   */
  z.object({ t: z.literal("ack"), ref: z.string(), resumeToken: z.string().optional() }),
  errorFrameSchema,
  z.object({ t: z.literal("typing"), on: z.boolean() }),
  z.object({ t: z.literal("pong") }),
]);
export type ServerFrame = z.infer<typeof serverFrameSchema>;
