// Reading the gateway's frames in the browser without zod: a small structural check of every server
// frame and outbound message the widget renders (the gateway validates with the shared zod schemas;
// this keeps a malformed frame from crashing the app, and renderers still treat every value as text).
import type { Outbound, ServerFrame, WidgetAgent } from "@caplo/shared";

/** Mirrors PROTOCOL_VERSION and WS_PATH of shared/src/protocol.ts (a test keeps them equal). */
export const PROTOCOL_VERSION = 1;
export const WS_PATH = "/v1/ws";

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isStr = (v: unknown): v is string => typeof v === "string";
const isArr = (v: unknown): v is unknown[] => Array.isArray(v);

const OUTBOUND_REQUIRED: Record<Outbound["type"], string[]> = {
  text: ["id", "from", "text"],
  progress: ["id", "callId", "state"],
  review: ["id", "proposalId", "title", "state"],
  outcome: ["id", "proposalId", "state", "message"],
  result: ["id", "callId", "layout", "title"],
  question: ["id", "elicitationId", "style", "message"],
  file: ["id", "name", "mimeType", "url"],
  handoff: ["id", "state", "text"],
  step_up: ["id", "level", "text"],
};

/** The outbound message if it has the shape the renderers rely on, else null. */
export function readOutbound(raw: unknown): Outbound | null {
  if (!isObj(raw) || !isStr(raw.type) || !(raw.type in OUTBOUND_REQUIRED)) return null;
  const required = OUTBOUND_REQUIRED[raw.type as Outbound["type"]];
  if (!required.every((key) => isStr(raw[key]))) return null;
  if (raw.type === "review" && !isArr(raw.fields)) return null;
  if (raw.type === "result" && (!isArr(raw.columns) || !isArr(raw.items) || !raw.items.every(isObj))) return null;
  if (raw.type === "question" && !isArr(raw.fields)) return null;
  if (raw.type === "file" && typeof raw.size !== "number") return null;
  if (raw.type === "outcome" && ((raw.receipt !== undefined && !isArr(raw.receipt)) || (raw.title !== undefined && !isStr(raw.title)))) return null;
  return raw as unknown as Outbound;
}

/** The welcome's agent presentation, with only the values of the types the header and log rely on. */
function readAgent(raw: unknown): WidgetAgent | undefined {
  if (!isObj(raw)) return undefined;
  const tiles = isObj(raw.mapTiles) && isStr(raw.mapTiles.url) && isStr(raw.mapTiles.attribution) ? { url: raw.mapTiles.url, attribution: raw.mapTiles.attribution } : undefined;
  return {
    handoff: raw.handoff === true,
    ...(isStr(raw.name) && { name: raw.name }),
    ...(isStr(raw.avatar) && { avatar: raw.avatar }),
    ...(isArr(raw.starters) && { starters: raw.starters.filter(isStr).slice(0, 4) }),
    ...(tiles && { mapTiles: tiles }),
  };
}

/** The welcome's ratings, each a reply's seq and "up" or "down" (others left out); undefined when none were sent. */
function readRatings(raw: unknown): WelcomeRatings | undefined {
  if (!isArr(raw)) return undefined;
  return raw.flatMap((r) => (isObj(r) && typeof r.seq === "number" && Number.isInteger(r.seq) && r.seq > 0 && (r.rating === "up" || r.rating === "down") ? [{ seq: r.seq, rating: r.rating }] : []));
}
type WelcomeRatings = NonNullable<Extract<ServerFrame, { t: "welcome" }>["ratings"]>;

/** The server frame if it is one the widget knows, else null. */
export function readServerFrame(text: string): ServerFrame | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObj(raw) || !isStr(raw.t)) return null;
  switch (raw.t) {
    case "welcome": {
      if (!isStr(raw.conversationId) || !isStr(raw.resumeToken)) return null;
      const agent = readAgent(raw.agent);
      const ratings = readRatings(raw.ratings);
      return { t: "welcome", v: PROTOCOL_VERSION, conversationId: raw.conversationId, resumeToken: raw.resumeToken, verified: raw.verified === true, ...(agent && { agent }), ...(ratings && { ratings }) };
    }
    case "delta":
      return isStr(raw.id) && isStr(raw.text) && typeof raw.at === "number" && Number.isInteger(raw.at) && raw.at >= 0 ? { t: "delta", id: raw.id, at: raw.at, text: raw.text } : null;
    case "event": {
      if (typeof raw.seq !== "number" || !Number.isInteger(raw.seq) || raw.seq < 1) return null;
      const message = readOutbound(raw.message);
      return message ? { t: "event", seq: raw.seq, at: isStr(raw.at) ? raw.at : "", message } : null;
    }
    case "ack":
      return isStr(raw.ref) ? (raw as unknown as ServerFrame) : null;
    case "error":
      return isStr(raw.code) && isStr(raw.message) ? (raw as unknown as ServerFrame) : null;
    case "typing":
      return typeof raw.on === "boolean" ? (raw as unknown as ServerFrame) : null;
    case "pong":
      return { t: "pong" };
    default:
      return null;
  }
}
