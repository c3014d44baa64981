// @caplo/shared: every wire and file format of Caplo, defined once.
export * from "./limits.ts";
export * from "./manifest.ts";
export * from "./manifestParse.ts";
export * from "./outcome.ts";
export * from "./messages.ts";
export * from "./protocol.ts";
export * from "./widgetCodes.ts";
export * from "./version.ts";
export * from "./channel.ts";
export * from "./agent.ts";
export * from "./channels.ts";
export * from "./evalCases.ts";
