// The gateway's public surface: the HTTP + WebSocket server and the helpers channels use to add routes.
export { Gateway, type GatewayOptions } from "./gateway.ts";
export { hashToken } from "./connection.ts";
export { DEFAULT_LIMITS, type ConnectionLimits, type VerifyResult } from "./connectionDeps.ts";
export { bearerMatches, readJson, sendError, sendJson, type HttpError, type RouteHandler } from "./http.ts";
