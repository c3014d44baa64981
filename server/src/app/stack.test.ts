import { describe, expect, it } from "vitest";
import { StartStack } from "./stack.ts";

describe("StartStack", () => {
  it("stops components last-first, and every one even when one fails (the first failure is thrown after)", async () => {
    const stack = new StartStack();
    const stopped: string[] = [];
    stack.push("store", "s", () => void stopped.push("store"));
    stack.push("engine", "e", () => {
      stopped.push("engine");
      throw new Error("engine stop failed");
    });
    stack.push("gateway", "g", async () => void stopped.push("gateway"));
    expect(stack.started).toEqual(["store", "engine", "gateway"]);
    await expect(stack.stopAll()).rejects.toThrow("engine stop failed");
    expect(stopped).toEqual(["gateway", "engine", "store"]);
    expect(stack.started).toEqual([]);
    await stack.stopAll(); // nothing left: a second stop does nothing
    expect(stopped).toHaveLength(3);
  });
});
