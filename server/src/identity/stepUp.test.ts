import { describe, expect, it } from "vitest";
import type { CallSubject } from "@caplo/shared";
import { satisfiesStepUp, stepUpShortfall } from "./stepUp.ts";

const NOW = new Date("2026-03-01T12:00:00Z");
const subject = (level: CallSubject["level"], secondsAgo: number): CallSubject => ({
  id: "cust-1",
  level,
  authTime: new Date(NOW.getTime() - secondsAgo * 1000).toISOString(),
});

describe("step-up checks", () => {
  it("orders levels low < standard < high: a higher level satisfies a lower requirement", () => {
    expect(satisfiesStepUp(subject("high", 0), { level: "standard" }, NOW)).toBe(true);
    expect(satisfiesStepUp(subject("standard", 0), { level: "standard" }, NOW)).toBe(true);
    expect(satisfiesStepUp(subject("low", 0), { level: "standard" }, NOW)).toBe(false);
    expect(stepUpShortfall(subject("standard", 0), { level: "high" }, NOW)).toBe("level_too_low");
    expect(satisfiesStepUp(subject("low", 0), { level: "low" }, NOW)).toBe(true);
  });

  it("accepts a sign-in exactly maxAuthAgeSeconds ago and refuses one a second older (300 and 301)", () => {
    expect(satisfiesStepUp(subject("high", 300), { level: "high", maxAuthAgeSeconds: 300 }, NOW)).toBe(true);
    expect(stepUpShortfall(subject("high", 301), { level: "high", maxAuthAgeSeconds: 300 }, NOW)).toBe("auth_too_old");
  });

  it("with maxAuthAgeSeconds 0 accepts only a sign-in in the same second", () => {
    expect(satisfiesStepUp(subject("low", 0), { level: "low", maxAuthAgeSeconds: 0 }, NOW)).toBe(true);
    expect(satisfiesStepUp(subject("low", 1), { level: "low", maxAuthAgeSeconds: 0 }, NOW)).toBe(false);
  });

  it("ignores the age when no maxAuthAgeSeconds is asked", () => {
    expect(satisfiesStepUp(subject("standard", 86_400 * 30), { level: "standard" }, NOW)).toBe(true);
  });

  it("checks the level before the age, and treats an unreadable authTime as not satisfied", () => {
    expect(stepUpShortfall(subject("low", 9999), { level: "high", maxAuthAgeSeconds: 60 }, NOW)).toBe("level_too_low");
    expect(stepUpShortfall({ id: "a", level: "high", authTime: "yesterday" }, { level: "high", maxAuthAgeSeconds: 60 }, NOW)).toBe("auth_time_invalid");
  });
});
