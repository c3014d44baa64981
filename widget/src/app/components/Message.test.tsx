// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen } from "@testing-library/preact";
import { describe, expect, test } from "vitest";
import type { Outbound } from "@caplo/shared";
import { WidgetContext, type WidgetApi } from "../context.ts";
import { en } from "../i18n.ts";
import { outbound, renderInWidget } from "../testing.tsx";
import { Message } from "./Message.tsx";

const text = (from: "customer" | "agent" | "team" | "system", t: string) => outbound({ type: "text", id: "m1", from, text: t }) as Outbound;

describe("conversation messages", () => {
  test("agent text may use the markdown subset with https links", () => {
    const { container } = renderInWidget(<Message message={text("agent", "Your order **SO-1002** shipped. [Track it](https://track.example/1)")} />);
    expect(container.querySelector("strong")!.textContent).toBe("SO-1002");
    expect(container.querySelector("a")!.getAttribute("href")).toBe("https://track.example/1");
  });

  test("hostile agent text: markup and javascript: links never become elements or links", () => {
    const hostile = '<script>alert(1)</script><img src=x onerror=alert(1)> [x](javascript:alert(1)) <a href="javascript:alert(1)">y</a> <iframe src="https://evil.example"></iframe>';
    const { container } = renderInWidget(<Message message={text("agent", hostile)} />);
    expect(container.querySelector("script, img, iframe, a")).toBeNull();
    expect(container.textContent).toContain("<script>alert(1)</script>");
  });

  test("visitor and system text is plain text, not markdown", () => {
    const { container } = renderInWidget(<Message message={text("customer", "**not bold** <b>x</b> https://a.example")} />);
    expect(container.querySelector("strong, b, a")).toBeNull();
    expect(container.textContent).toContain("**not bold** <b>x</b>");
  });

  test("overlong agent text is cut", () => {
    const { container } = renderInWidget(<Message message={text("agent", "word ".repeat(10_000))} />);
    expect(container.textContent!.length).toBeLessThan(8_100);
  });

  test("a file is a download link with its name, type and size", () => {
    const file = outbound({ type: "file", id: "f1", name: "invoice-1002.pdf", mimeType: "application/pdf", size: 48_213, url: "https://gw.example/v1/files/abc" });
    const { container } = renderInWidget(<Message message={file} />);
    const a = screen.getByRole("link", { name: "Download invoice-1002.pdf" });
    expect(a.getAttribute("href")).toBe("https://gw.example/v1/files/abc");
    expect(a.getAttribute("download")).toBe("invoice-1002.pdf");
    expect(container.textContent).toContain("PDF document · 47.1 KB");
  });

  test("a file with an unsafe URL is listed but not linked", () => {
    const file = outbound({ type: "file", id: "f1", name: "x.pdf", mimeType: "application/pdf", size: 1, url: "javascript:alert(1)" });
    const { container } = renderInWidget(<Message message={file} />);
    expect(container.querySelector("a")).toBeNull();
    expect(container.textContent).toContain("x.pdf");
  });

  test("a long reply starts collapsed with Show more, unless the visitor watched it being written; a short one has no toggle", () => {
    const long = outbound({ type: "text", id: "long", from: "agent", text: "A sentence of a long answer. ".repeat(30) }) as Outbound;
    renderInWidget(<Message message={long} />);
    const toggle = screen.getByRole("button", { name: "Show more" });
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    expect(document.querySelector(".bubble.collapsed")).not.toBeNull();
    fireEvent.click(toggle);
    expect(screen.getByRole("button", { name: "Show less" }).getAttribute("aria-expanded")).toBe("true");
    expect(document.querySelector(".bubble.collapsed")).toBeNull();
    cleanup();
    renderInWidget(<Message message={long} expanded />);
    expect(screen.getByRole("button", { name: "Show less" })).toBeTruthy();
    cleanup();
    renderInWidget(<Message message={outbound({ type: "text", id: "short", from: "agent", text: "Short." }) as Outbound} />);
    expect(screen.queryByRole("button")).toBeNull();
  });

  test("a handoff notice is shown as text", () => {
    renderInWidget(<Message message={outbound({ type: "handoff", id: "h", state: "requested", text: "A person from our team will reply here." })} />);
    expect(screen.getByText("A person from our team will reply here.")).toBeTruthy();
  });

  test("a step-up prompt asks the host page to verify again a visitor who was verified, and to sign in one who was not", () => {
    const { stepUps, container } = renderInWidget(
      <Message message={outbound({ type: "step_up", id: "s", level: "high", maxAuthAgeSeconds: 300, text: "Please sign in again to cancel." })} />,
      { verified: true, latestStepUp: "s" },
    );
    expect(screen.getByRole("heading").textContent).toBe("Please verify again");
    fireEvent.click(screen.getByRole("button", { name: "Verify" }));
    expect(stepUps).toEqual([{ level: "high", maxAuthAgeSeconds: 300 }]);
    expect(container.textContent).toContain("Follow the steps");
    cleanup();
    renderInWidget(<Message message={outbound({ type: "step_up", id: "s2", level: "low", text: "You need to verify your identity for this." })} />, { verified: false, latestStepUp: "s2" });
    expect(screen.getByRole("heading").textContent).toBe("Please sign in");
    expect(screen.getByRole("button", { name: "Sign in" })).toBeTruthy();
    expect(document.body.textContent).not.toMatch(/again|verify/i);
  });

  test("only the latest step-up prompt asks; an earlier one says a newer one is below", () => {
    renderInWidget(<Message message={outbound({ type: "step_up", id: "old", level: "low", text: "x" })} />, { latestStepUp: "new" });
    expect(screen.queryByRole("button", { name: "Verify" })).toBeNull();
    expect(document.body.textContent).toContain("A newer request to verify is below.");
  });

  test("once the page has verified the customer, the step-up prompt says so instead of still asking", () => {
    const prompt = outbound({ type: "step_up", id: "s", level: "high", text: "Please sign in again." }) as Outbound;
    const api = (verifications: number): WidgetApi => ({ t: en, locale: "en-US", connected: true, used: {}, failed: {}, act: () => true, say: () => true, openPage: () => undefined, requestStepUp: () => undefined, verifications, verified: true, latestStepUp: "s", writeStates: {}, keep: () => undefined, labels: {}, names: {}, times: true });
    const { rerender } = render(<WidgetContext.Provider value={api(1)}><Message message={prompt} /></WidgetContext.Provider>);
    fireEvent.click(screen.getByRole("button", { name: "Verify" }));
    expect(document.body.textContent).toContain("Follow the steps on the page to verify.");
    rerender(<WidgetContext.Provider value={api(2)}><Message message={prompt} /></WidgetContext.Provider>);
    expect(document.body.textContent).toContain("Verified. Thank you.");
    expect(screen.queryByRole("button", { name: "Verify" })).toBeNull();
  });

  test("a visitor signed in through the page's own sign-in (not the prompt's button): the prompt no longer asks", () => {
    const prompt = outbound({ type: "step_up", id: "s", level: "low", text: "Please sign in." }) as Outbound;
    const api = (verifications: number, verified: boolean): WidgetApi => ({ t: en, locale: "en-US", connected: true, used: {}, failed: {}, act: () => true, say: () => true, openPage: () => undefined, requestStepUp: () => undefined, verifications, verified, latestStepUp: "s", writeStates: {}, keep: () => undefined, labels: {}, names: {}, times: true });
    const { rerender } = render(<WidgetContext.Provider value={api(0, false)}><Message message={prompt} /></WidgetContext.Provider>);
    expect(screen.getByRole("button", { name: "Sign in" })).toBeTruthy();
    rerender(<WidgetContext.Provider value={api(1, true)}><Message message={prompt} /></WidgetContext.Provider>);
    expect(document.body.textContent).toContain("Verified. Thank you.");
    expect(screen.queryByRole("button")).toBeNull();
  });

  test("a write's prompt follows its write: a verification at too low a level leaves it asking with its button again; done once the write went on; its wording is kept", () => {
    const prompt = outbound({ type: "step_up", id: "w", level: "high", proposalId: "p1", text: "To finish this, please verify your identity again." }) as Outbound;
    const kept: Record<string, string> = {};
    const api = (verifications: number, state: string): WidgetApi => ({ t: en, locale: "en-US", connected: true, used: {}, failed: {}, act: () => true, say: () => true, openPage: () => undefined, requestStepUp: () => undefined, verifications, verified: true, latestStepUp: state === "step_up_required" ? "w" : null, writeStates: { p1: state }, keep: (key, value) => void (kept[key] = value), labels: {}, names: {}, times: true });
    const { rerender } = render(<WidgetContext.Provider value={api(1, "step_up_required")}><Message message={prompt} /></WidgetContext.Provider>);
    expect(kept).toEqual({ "stepup:w": "again" });
    fireEvent.click(screen.getByRole("button", { name: "Verify" }));
    expect(document.body.textContent).toContain("Follow the steps on the page to verify.");
    // Verified, but not at the level the write needs: it still waits, so the prompt asks again.
    rerender(<WidgetContext.Provider value={api(2, "step_up_required")}><Message message={prompt} /></WidgetContext.Provider>);
    expect(screen.getByRole("button", { name: "Verify" })).toBeTruthy();
    expect(document.body.textContent).not.toContain("Verified. Thank you.");
    rerender(<WidgetContext.Provider value={api(3, "applied")}><Message message={prompt} /></WidgetContext.Provider>);
    expect(document.body.textContent).toContain("Verified. Thank you.");
    expect(screen.queryByRole("button")).toBeNull();
  });
});
