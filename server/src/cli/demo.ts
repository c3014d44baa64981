// `caplo demo` (what `npm start` runs): the demo shop with the widget, the example tools, an embedded
// SQLite store and, without a model key, the offline demo model; one URL to open, Ctrl-C to stop.
import { existsSync } from "node:fs";
import { DEMO_AGENT_FILE, startDemo } from "../demo/demo.ts";
import { parseDemoArgs } from "../demo/demoOptions.ts";

export const help = `caplo demo [options]        (npm start runs this)

Builds what is not built yet (the widget bundle, each demo tool package), starts the demo shop API, the
gateway with an embedded SQLite store and the sandboxed tool runner, publishes the demo agent
(examples/demo/agent.yaml) and serves a small demo shop page with the chat widget. Open the URL it prints.
Without a model key the agent runs on the offline demo model, which understands the demo's phrases
(type "help" in the chat). Ctrl-C stops everything.

Options:
  --port N              the demo page's port (CAPLO_PORT, default 4300)
  --shop-port N         the demo shop API's port (CAPLO_DEMO_SHOP_PORT, default 4100; 0 picks a free one;
                        the help articles' page origins follow it)
  --gateway-port N      the gateway's port: the widget's WebSocket, the team API and the messaging webhooks
                        /webhooks/<platform> (CAPLO_DEMO_GATEWAY_PORT, default 4200; 0 picks a free one);
                        point a tunnel at it to try WhatsApp, Messenger or Instagram (docs/demo-shop.md)
  --data-dir DIR        the demo's SQLite store, releases and shop state (CAPLO_DEMO_DIR, default .caplo/demo);
                        delete it to start over
  --pending-ms N        how long the shop takes to finish a pending cancellation (CAPLO_DEMO_PENDING_MS,
                        default 3000)
  --status-check-ms N   gap before a pending write's first status check (CAPLO_STATUS_CHECK_BASE_MS,
                        default 4000; each next one doubles)
  --verbose             print the engine's info lines too

Messaging channels (environment, docs/channels.md): set CAPLO_PUBLIC_URL to the tunnel's https address and
a platform's variables (CAPLO_TWILIO_*, CAPLO_WHATSAPP_FROM; CAPLO_MESSENGER_PAGE_TOKEN, CAPLO_META_*;
CAPLO_INSTAGRAM_TOKEN); the demo prints the webhook URL to enter for each one.

A real model instead of the offline one (environment):
  OPENAI_API_KEY        use OpenAI (CAPLO_MODEL picks the model)
  OPENAI_BASE_URL       any OpenAI-compatible server (Ollama, vLLM, llama.cpp), with CAPLO_MODEL

Exit codes: 0 after Ctrl-C, 1 when the demo cannot start (port in use, a build failing, a corrupt
database: the message says what to do), 2 for a wrong option.
`;

export async function run(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(help);
    return 0;
  }
  // The installed `caplo` package carries the server, not the demo shop's example packages and page.
  if (!existsSync(DEMO_AGENT_FILE)) {
    console.error(`caplo demo: demo_unavailable: ${DEMO_AGENT_FILE} is not here; the demo runs from a checkout of the repository (npm install && npm start there)`);
    return 1;
  }
  const parsed = parseDemoArgs(args, process.env);
  if (!parsed.ok) {
    console.error(`caplo demo: ${parsed.error.message}`);
    return 2;
  }
  // Ctrl-C while starting stops the start; after it, it stops the running demo.
  let stopRequested = false;
  let wake: () => void = () => undefined;
  const abort = new AbortController();
  const stop = () => {
    stopRequested = true;
    abort.abort();
    wake();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  console.log("Starting the Caplo demo shop ...");
  let started: Awaited<ReturnType<typeof startDemo>>;
  try {
    started = await startDemo(parsed.options, console.log, abort.signal);
  } catch (error) {
    console.error(`caplo demo: could not start: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  if (!started.ok && started.error.code === "interrupted") {
    console.log("Stopped.");
    return 0;
  }
  if (!started.ok) {
    console.error(`\ncaplo demo: ${started.error.message}${started.error.code ? ` [${started.error.code}]` : ""}`);
    return 1;
  }
  if (!stopRequested) {
    console.log(`\n  Caplo demo shop is running. Open:  ${started.demo.url}`);
    console.log(`  The documentation:                ${started.demo.gatewayUrl}/docs/`);
    console.log(`  The team console:                 ${started.demo.consoleUrl}`);
    console.log(`    sign in as ${started.demo.member} with the token   ${started.demo.token}`);
    console.log("    (a new token each start; it works only for this demo)\n");
    console.log("  Press Ctrl-C to stop.");
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
  console.log("\nStopping the demo ...");
  await started.demo.close();
  process.off("SIGINT", stop);
  process.off("SIGTERM", stop);
  console.log("Stopped.");
  return 0;
}
