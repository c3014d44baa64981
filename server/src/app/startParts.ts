// Two steps of the composition root's start (startServer in server.ts), in its order, on its start/stop
// stack: the runner and the engine (the engine stopped before the runner it calls), and the gateway
// listening last (closed first).
import type { AddressInfo } from "node:net";
import { Engine, type EngineOptions } from "../engine/engine.ts";
import type { Gateway } from "../gateway/gateway.ts";
import type { StartStack } from "./stack.ts";

/** Pushes the runner and a new engine on the stack and starts the engine (`scheduler: false`: no timers). */
export async function startEngine(stack: StartStack, options: EngineOptions, start: { scheduler?: boolean } = {}): Promise<Engine> {
  stack.push("runner", options.runner, (started) => started.close());
  const engine = stack.push("engine", new Engine(options), (started) => started.stop());
  await engine.start(start);
  return engine;
}

/** The gateway listening, pushed on the stack; a listen that fails stops everything the stack holds. */
export async function listenGateway(stack: StartStack, gateway: Gateway, port: number, host: string): Promise<AddressInfo> {
  let address: AddressInfo;
  try {
    address = await gateway.listen(port, host);
  } catch (error) {
    await stack.stopAll().catch(() => undefined);
    throw error;
  }
  stack.push("gateway", gateway, (listening) => listening.close());
  return address;
}
