// A fake Graph API on loopback for Messenger or Instagram: `POST /{version}/me/messages` with the Send API
// body. It checks the token and every platform limit, refuses what Meta would refuse, and can fail on demand.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { checkSendBody, type MetaRules } from "./platformRules.ts";

/** A Send API body as the fake accepted it. */
export interface SendBody {
  recipient: { id: string };
  messaging_type?: string;
  tag?: string;
  sender_action?: string;
  message?: {
    text?: string;
    quick_replies?: Array<{ content_type: string; title: string; payload: string }>;
    attachment?: { type: string; payload: { template_type?: string; text?: string; buttons?: Array<{ type: string; title: string; payload: string }>; url?: string } };
  };
}

export interface FakeGraph {
  url: string;
  accessToken: string;
  /** Every accepted Send API body, in order. */
  sent: SendBody[];
  violations: string[];
  failNext(n: number, status: number, code: number, subcode?: number): void;
  /** Accepted sends wait unanswered until the returned function is called; `waiting` counts them. */
  hold(): () => void;
  waiting: number;
  /** Another page (or Instagram account) with its own token (given, or made `EAA…`); `accessToken` is page 105000000000001. */
  addPage(pageId: string, token?: string): string;
  /** The page whose token sent a body of `sent`. */
  pageOf(body: SendBody): string | undefined;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export async function startFakeGraph(rules: MetaRules): Promise<FakeGraph> {
  const accessToken = `EAA${randomBytes(12).toString("hex")}`;
  const failures: Array<{ status: number; code: number; subcode?: number }> = [];
  const state = { accessToken, sent: [] as SendBody[], violations: [] as string[], waiting: 0 };
  let held: Promise<void> | undefined;
  // `/me` is the page the token belongs to.
  const pages = new Map<string, string>([[accessToken, "105000000000001"]]);
  const sentBy = new Map<SendBody, string>();
  const refuse = (res: import("node:http").ServerResponse, status: number, code: number, message: string, subcode?: number) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message, type: "OAuthException", code, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: "fake" } }));
  };
  const server: Server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const page = pages.get((req.headers.authorization ?? "").replace(/^Bearer /, ""));
    if (!req.headers.authorization?.startsWith("Bearer ") || page === undefined) return refuse(res, 401, 190, "Invalid OAuth access token.");
    if (req.method !== "POST" || !/^\/v\d+\.\d+\/me\/messages$/.test(new URL(req.url ?? "/", "http://x").pathname)) return refuse(res, 404, 100, "Unknown path");
    if (!(req.headers["content-type"] ?? "").includes("application/json")) return refuse(res, 400, 100, "JSON body expected");
    let body: SendBody;
    try {
      body = JSON.parse(raw);
    } catch {
      return refuse(res, 400, 100, "Invalid JSON");
    }
    const v = checkSendBody(body, rules);
    if (v.length) {
      state.violations.push(...v);
      return refuse(res, 400, 100, `(#100) ${v.join("; ")}`);
    }
    const failure = failures.shift();
    if (failure) return refuse(res, failure.status, failure.code, "Injected failure", failure.subcode);
    if (held) {
      state.waiting++;
      await held;
      state.waiting--;
    }
    state.sent.push(body);
    sentBy.set(body, page);
    res.writeHead(200, { "content-type": "application/json" });
    if (body.sender_action) return res.end(JSON.stringify({ recipient_id: body.recipient.id }));
    res.end(JSON.stringify({ recipient_id: body.recipient.id, message_id: `m_${randomBytes(12).toString("hex")}` }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    failNext: (n: number, status: number, code: number, subcode?: number) => {
      for (let i = 0; i < n; i++) failures.push({ status, code, ...(subcode ? { subcode } : {}) });
    },
    addPage: (pageId: string, given?: string) => {
      const token = given ?? `EAA${randomBytes(12).toString("hex")}`;
      pages.set(token, pageId);
      return token;
    },
    pageOf: (body: SendBody) => sentBy.get(body),
    hold: () => {
      let release!: () => void;
      held = new Promise<void>((resolve) => (release = resolve));
      return () => {
        held = undefined;
        release();
      };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
