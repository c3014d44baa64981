// The team console on a port of its own (CAPLO_CONSOLE_PORT): a browser origin apart from the widget app's,
// so that script running on the widget's origin (the widget app shows model and tool content) cannot use a
// member's console session. Against the real gateway, engine and SQLite store, and in Chromium: the console,
// its sign-in and its session cookie answer only on the console's port; the widget's paths never answer
// there; the team API with a bearer token answers on both. In a browser holding a member's session, a page
// of the widget's origin can neither read the team API on the console's origin (another origin) nor use the
// cookie on its own (not a session there), while the console's own page can. A console port in use stops
// the start with a coded error naming it.
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WebSocket } from "ws";
import { ORIGIN, startStack, type Stack } from "../gateway/support/stack.ts";
import { launchChromium } from "../widget/browser.ts";
import { buildConsole } from "./build.ts";
import { ANA, screenshots, signIn } from "./support.ts";

const snap = screenshots("console-port");

let stack: Stack;
let browser: Browser;
let consoleBase: string;

beforeAll(async () => {
  await buildConsole();
  // As caplo serve is given it: CAPLO_CONSOLE_PORT (0: a free one).
  stack = await startStack({ env: { CAPLO_CONSOLE_PORT: "0" } });
  const address = stack.gateway.consoleAddress;
  if (!address) throw new Error("the console's port is not listening");
  consoleBase = `http://127.0.0.1:${address.port}`;
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** An answer's status and its error (`{ error: { code, path, message } }`). */
const json = async (response: Response): Promise<{ status: number; body: { code?: string; message?: string } }> => ({
  status: response.status,
  body: ((await response.json()) as { error?: { code: string; message: string } }).error ?? {},
});

describe("the team console on a port of its own", () => {
  test("serves the console, its sign-in and its cookie only there, the widget never there, bearer tokens on both", async () => {
    const onWidgetPort = await json(await fetch(`${stack.base}/console`));
    expect(onWidgetPort).toMatchObject({ status: 404, body: { code: "not_found" } });
    expect(onWidgetPort.body.message).toContain("its own port");
    const page = await fetch(`${consoleBase}/console`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    for (const path of ["/widget.js", "/widget/app.html", "/v1/ws", "/"]) {
      expect((await json(await fetch(`${consoleBase}${path}`))).body.message, path).toBe("this port serves the team console only");
    }
    // The widget's socket is not on the console's port: a real WebSocket client from the agent's own site is
    // refused there, and opens on the widget's port (the control).
    const open = (base: string) =>
      new Promise<string>((resolve) => {
        const socket = new WebSocket(`${base.replace("http", "ws")}/v1/ws`, { origin: ORIGIN });
        socket.once("open", () => {
          resolve("open");
          socket.close();
        });
        socket.once("unexpected-response", (_req, res) => {
          resolve(`http ${res.statusCode}`);
          socket.terminate();
        });
        socket.once("error", (error) => resolve(`error: ${error.message}`));
      });
    expect(await open(consoleBase)).toBe("http 404");
    expect(await open(stack.base)).toBe("open");

    // A sign-in on the widget's port is not taken, even with the console's own Origin.
    const elsewhere = await fetch(`${stack.base}/v1/team/session`, { method: "POST", headers: { origin: consoleBase, "content-type": "application/json" }, body: JSON.stringify({ token: ANA }) });
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.headers.get("set-cookie")).toBeNull();
    // On the console's port, from its own origin: a session.
    const signedIn = await fetch(`${consoleBase}/v1/team/session`, { method: "POST", headers: { origin: consoleBase, "content-type": "application/json" }, body: JSON.stringify({ token: ANA }) });
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
    const { csrf } = (await signedIn.json()) as { csrf: string };
    expect((await fetch(`${consoleBase}/v1/team/conversations`, { headers: { cookie } })).status).toBe(200);
    // The same cookie on the widget's port is no session (cookies do not tell ports apart; the server does).
    expect(await json(await fetch(`${stack.base}/v1/team/conversations`, { headers: { cookie } }))).toMatchObject({ status: 401, body: { code: "unauthorized" } });
    expect((await fetch(`${stack.base}/v1/team/session`, { method: "DELETE", headers: { cookie, origin: stack.base, "x-caplo-csrf": csrf } })).status).toBe(401);
    // A change with the cookie from a page of the widget's origin, on the console's port: refused.
    const change = await fetch(`${consoleBase}/v1/team/session`, { method: "DELETE", headers: { cookie, origin: stack.base, "x-caplo-csrf": csrf } });
    expect(await json(change)).toMatchObject({ status: 403, body: { code: "csrf_failed" } });
    // A bearer token answers on both (API clients, not browsers).
    for (const base of [stack.base, consoleBase]) expect((await fetch(`${base}/v1/team/conversations`, { headers: { authorization: `Bearer ${ANA}` } })).status, base).toBe(200);
  });

  test("a console port in use stops the start, named: port_in_use at CAPLO_CONSOLE_PORT", async () => {
    const taken = stack.gateway.consoleAddress!.port;
    await expect(startStack({ env: { CAPLO_CONSOLE_PORT: String(taken) } })).rejects.toThrow(`port_in_use at CAPLO_CONSOLE_PORT: port ${taken} for the team console (CAPLO_CONSOLE_PORT) is already in use on 127.0.0.1`);
    // The running server is untouched.
    expect((await fetch(`${consoleBase}/healthz`)).status).toBe(200);
  });

  test("in Chromium, a page of the widget's origin cannot use a member's console session", async () => {
    const context = await browser.newContext();
    try {
      const consolePage = await context.newPage();
      await signIn(consolePage, consoleBase, ANA);
      await snap(consolePage, "inbox");
      // The control: the console's own page reads the team API with its session.
      const read = (page: typeof consolePage, url: string) =>
        page.evaluate(async (target) => {
          try {
            const response = await fetch(target, { credentials: "include" });
            return { status: response.status };
          } catch (error) {
            return { failed: String(error) };
          }
        }, url);
      expect(await read(consolePage, `${consoleBase}/v1/team/conversations`)).toEqual({ status: 200 });

      // A page of the widget's origin, in the same browser with the session's cookie in its jar.
      const widgetOrigin = await context.newPage();
      await widgetOrigin.goto(`${stack.base}/healthz`);
      const cross = await read(widgetOrigin, `${consoleBase}/v1/team/conversations`);
      expect(cross).toHaveProperty("failed"); // another origin: the answer is never the page's to read
      expect(await read(widgetOrigin, `${stack.base}/v1/team/conversations`)).toEqual({ status: 401 });
      // Nor can it open the console on its own origin and script it: there is none.
      expect(await read(widgetOrigin, `${stack.base}/console`)).toEqual({ status: 404 });
    } finally {
      await context.close();
    }
  });
});
