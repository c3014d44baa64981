import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { callClock } from "./callClock.ts";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("a call's clock", () => {
  it("times out after its running time reaches the timeout, not counting the waits for the visitor", () => {
    const fired = vi.fn();
    const clock = callClock(1000, fired);
    vi.advanceTimersByTime(600);
    clock.pause();
    vi.advanceTimersByTime(60_000);
    expect(fired).not.toHaveBeenCalled();
    clock.resume();
    vi.advanceTimersByTime(399);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it("overlapping waits pause it once; the deadline moves by the wait", () => {
    const fired = vi.fn();
    const start = Date.now();
    const clock = callClock(1000, fired);
    clock.pause();
    clock.pause();
    vi.advanceTimersByTime(5000);
    clock.resume();
    vi.advanceTimersByTime(5000);
    expect(fired).not.toHaveBeenCalled();
    clock.resume();
    expect(clock.deadline().getTime()).toBe(start + 11_000);
    vi.advanceTimersByTime(1000);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it("stopped, it never fires", () => {
    const fired = vi.fn();
    const clock = callClock(1000, fired);
    clock.stop();
    vi.advanceTimersByTime(5000);
    expect(fired).not.toHaveBeenCalled();
  });
});
