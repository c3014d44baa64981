// The `caplo` CLI: a table of commands, each in a module of its own that is loaded only when used.
// Add a command with one line in COMMANDS; its module exports `run(args): Promise<number>` and `help`.

export type Command = {
  /** One line for the command list. */
  summary: string;
  load: () => Promise<{ run: (args: string[]) => Promise<number>; help: string }>;
};

export const COMMANDS: Record<string, Command> = {
  demo: { summary: "Start the demo shop: server, widget, example tools, SQLite (what `npm start` runs)", load: () => import("./demo.ts") },
  serve: { summary: "Start the server: widget WebSocket, engine, runner, store, team API (flags and env in --help)", load: () => import("./serve.ts") },
  "agent init": { summary: "Write a starter agent.yaml", load: () => import("./agent.ts").then((m) => m.init) },
  "agent validate": { summary: "Check an agent.yaml and print every problem with its line", load: () => import("./agent.ts").then((m) => m.validate) },
  "agent publish": { summary: "Publish an agent as an immutable release pinned to built package versions", load: () => import("./agent.ts").then((m) => m.publish) },
  "agent schema": { summary: "Print the JSON Schema of agent.yaml", load: () => import("./agent.ts").then((m) => m.schema) },
  "secret set": { summary: "Set a workspace secret from standard input or --file (never the command line)", load: () => import("./secret.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["set", ...args]) })) },
  "secret list": { summary: "List a workspace's secrets: names, versions, when and by whom (never values)", load: () => import("./secret.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["list", ...args]) })) },
  "secret rm": { summary: "Remove a workspace secret's value", load: () => import("./secret.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["rm", ...args]) })) },
  "secret rotate-key": { summary: "Seal every workspace secret again under the key file's first key", load: () => import("./secret.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["rotate-key", ...args]) })) },
  "member add": { summary: "Add a team member to a workspace and print their new token once", load: () => import("./member.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["add", ...args]) })) },
  "member list": { summary: "List a workspace's team members: configured and added, never tokens", load: () => import("./member.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["list", ...args]) })) },
  "member rm": { summary: "Remove a team member: their token is refused and their console sessions end at once", load: () => import("./member.ts").then((m) => ({ help: m.help, run: (args: string[]) => m.run(["rm", ...args]) })) },
  "team token": { summary: "Make a team member's API token and its CAPLO_TEAM_MEMBERS entry", load: () => import("./team.ts") },
  "tool init": { summary: "Create a tool package (function or MCP) that builds as written", load: () => import("./tool-init.ts") },
  "tool build": { summary: "Build a tool package and print its frozen version, or every error", load: () => import("./tool-build.ts") },
  "tool gc": { summary: "Remove old frozen package versions that no release pins", load: () => import("./tool-gc.ts") },
  "tool test": { summary: "Run a tool package's fixtures through the sandboxed runner", load: () => import("./tool-test.ts") },
  "tool dev": { summary: "Start a package's src/stdio.ts on Node 24 for local MCP clients", load: () => import("./tool-dev.ts") },
  "tool logs": { summary: "Show an invocation's log lines (from caplo tool test)", load: () => import("./tool-logs.ts") },
  eval: { summary: "Run an agent release's evaluation cases: writes proposed, never run (CASES.yaml --release NAME@ID)", load: () => import("./eval.ts") },
  remote: { summary: "Connect a remote MCP server: list, review and publish its tools", load: () => import("./remote.ts") },
};

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length), 10);
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  caplo ${name.padEnd(width)}  ${command.summary}`);
  return [
    "caplo: customer-facing AI agents that act safely.",
    "",
    "Usage:",
    ...lines,
    "",
    "Run `caplo <command> --help` for a command's options.",
  ].join("\n");
}

export async function main(argv: string[]): Promise<number> {
  const words = argv.filter((arg) => !arg.startsWith("-"));
  if (argv.length === 0 || (argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help")) {
    console.log(usage());
    return 0;
  }
  // Commands may be two words (`tool build`): take the longest name that matches.
  const two = words.slice(0, 2).join(" ");
  const name = COMMANDS[two] ? two : words[0] && COMMANDS[words[0]] ? words[0] : undefined;
  if (!name) {
    console.error(`caplo: unknown command '${argv.join(" ")}'.\n\n${usage()}`);
    return 2;
  }
  const rest = [...argv];
  for (const word of name.split(" ")) rest.splice(rest.indexOf(word), 1);
  const command = await COMMANDS[name]!.load();
  if (rest.includes("--help") || rest.includes("-h")) {
    console.log(command.help);
    return 0;
  }
  return command.run(rest);
}
