import { describe, expect, test } from "vitest";
import { backoff, RECONNECT_BASE_MS, RECONNECT_MAX_MS } from "./connection.ts";

describe("reconnect backoff", () => {
  test("doubles per failed attempt from the base, with at most half of it as jitter", () => {
    expect(backoff(1, () => 1)).toBe(RECONNECT_BASE_MS);
    expect(backoff(1, () => 0)).toBe(RECONNECT_BASE_MS / 2);
    expect(backoff(2, () => 1)).toBe(RECONNECT_BASE_MS * 2);
    expect(backoff(4, () => 1)).toBe(RECONNECT_BASE_MS * 8);
  });

  test("never waits longer than the cap", () => {
    expect(backoff(50, () => 1)).toBe(RECONNECT_MAX_MS);
  });
});
