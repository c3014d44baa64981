// The one formatter of a component's log line: `level: message {data as JSON}`. Every component the
// composition root starts (engine, gateway, cluster, handoff delivery) logs through it.
export type Level = "debug" | "info" | "warn" | "error";
export type ComponentLog = (level: Level, message: string, data?: unknown) => void;

export function formatLogLine(level: string, message: string, data?: unknown): string {
  return `${level}: ${message}${data ? ` ${JSON.stringify(data)}` : ""}`;
}

/** A component's log writing formatted lines to `write`. */
export function componentLog(write: (line: string) => void): ComponentLog {
  return (level, message, data) => write(formatLogLine(level, message, data));
}
