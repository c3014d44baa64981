// A fake Twilio on loopback for the real twilio client: the Content API (/v1/Content) and the Messages API
// (/2010-04-01/Accounts/{sid}/Messages.json). It checks auth and every WhatsApp limit, refuses what Twilio
// would refuse, and can be told to fail (5xx, 429, error 63016). Told where a message's StatusCallback URL is
// reached, it posts that message's status callbacks there as Twilio does: form-encoded, signed by the real
// twilio library over exactly the StatusCallback URL.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import twilio from "twilio";
import { TWILIO_ERROR_OUTSIDE_WINDOW } from "@caplo/shared/channels";
import { checkContentCreate, checkResolvedContent, checkTwilioMessage, resolveVariables } from "./platformRules.ts";

export interface SentWhatsApp {
  to: string;
  from: string;
  messagingServiceSid?: string;
  body?: string;
  mediaUrls: string[];
  contentSid?: string;
  /** The StatusCallback URL the message was sent with. */
  statusCallback?: string;
  /** The content as the customer sees it: resolved body and button or item titles with their ids. */
  content?: { type: string; body: string; options: Array<{ title: string; id: string; description?: string }> };
  sid: string;
}

export interface FakeTwilio {
  url: string;
  accountSid: string;
  authToken: string;
  contents: Map<string, { types: Record<string, unknown> }>;
  contentCreates: number;
  /** The create bodies, in order (friendly_name, variables, types). */
  created: Array<{ friendly_name: string; variables: Record<string, string>; types: Record<string, unknown> }>;
  sent: SentWhatsApp[];
  violations: string[];
  /** The next n message sends answer with this status and Twilio error code. */
  failNext(n: number, status: number, code: number): void;
  /** Free-form sends to this address are refused with 63016. */
  closeWindow(to: string): void;
  /**
   * The 24-hour window to this address is closed as Twilio reports it for WhatsApp: the send is accepted
   * (queued), then its status callback says failed with ErrorCode 63016 — unless it is an approved template.
   */
  closeWindowLate(to: string): void;
  /** An approved WhatsApp template (body "{{1}}, ..."): a ContentSid that may be sent outside the window. */
  addApprovedTemplate(body: string): string;
  /** Status callbacks to a StatusCallback URL are posted to `local` instead (the public URL's proxy). */
  routeCallbacks(publicUrl: string, local: string): void;
  /** The statuses each accepted message reports from now on, in order (default sent, delivered, read). */
  setStatusFlow(statuses: string[]): void;
  /** Every status callback posted: the message, the status and what the webhook answered. */
  callbacks: Array<{ sid: string; status: string; errorCode?: string; answer: number }>;
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

export async function startFakeTwilio(): Promise<FakeTwilio> {
  const accountSid = `AC${randomBytes(16).toString("hex")}`;
  const authToken = randomBytes(16).toString("hex");
  const failures: Array<{ status: number; code: number }> = [];
  const closed = new Set<string>();
  const closedLate = new Set<string>();
  const approved = new Set<string>();
  const routes = new Map<string, string>();
  const callbacks: FakeTwilio["callbacks"] = [];
  const flow = { statuses: ["sent", "delivered", "read"] };
  /** Posts one status callback as Twilio does: the form Twilio sends for WhatsApp, signed over the callback URL. */
  const callBack = async (url: string, message: SentWhatsApp, status: string, errorCode?: string) => {
    const local = routes.get(url);
    if (!local) return;
    const params: Record<string, string> = {
      ChannelPrefix: "whatsapp",
      ApiVersion: "2010-04-01",
      MessageStatus: status,
      SmsSid: message.sid,
      SmsStatus: status,
      ChannelInstallSid: `XE${"0".repeat(32)}`,
      To: message.to,
      From: message.from.startsWith("whatsapp:") ? message.from : "whatsapp:+14155238886",
      MessageSid: message.sid,
      StructuredMessage: "false",
      AccountSid: accountSid,
      ChannelToAddress: message.to.replace(/^whatsapp:/, "").slice(0, -3) + "XXX",
      ...(errorCode ? { ErrorCode: errorCode } : {}),
    };
    const body = new URLSearchParams(params).toString();
    const signature = twilio.getExpectedTwilioSignature(authToken, url, params);
    const answer = await fetch(local, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature }, body });
    await answer.arrayBuffer();
    callbacks.push({ sid: message.sid, status, ...(errorCode ? { errorCode } : {}), answer: answer.status });
  };
  const report = async (message: SentWhatsApp, free: boolean) => {
    const url = message.statusCallback;
    if (!url) return;
    if (free && closedLate.has(message.to)) return callBack(url, message, "failed", String(TWILIO_ERROR_OUTSIDE_WINDOW));
    for (const status of flow.statuses) await callBack(url, message, status);
  };
  const state: Pick<FakeTwilio, "accountSid" | "authToken" | "contents" | "contentCreates" | "created" | "sent" | "violations"> = {
    accountSid,
    authToken,
    contents: new Map(),
    contentCreates: 0,
    created: [],
    sent: [],
    violations: [],
  };
  const refuse = (res: import("node:http").ServerResponse, status: number, code: number, message: string) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify({ code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }));
  };
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const expected = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString("base64")}`;
    if (req.headers.authorization !== expected) return refuse(res, 401, 20003, "Authenticate");
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (req.method === "POST" && path === "/v1/Content") {
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        return refuse(res, 400, 20001, "Invalid JSON");
      }
      const v = checkContentCreate(json);
      if (v.length) {
        state.violations.push(...v);
        return refuse(res, 400, 21656, v.join("; "));
      }
      state.contentCreates++;
      state.created.push(json as FakeTwilio["created"][number]);
      const sid = `HX${randomBytes(16).toString("hex")}`;
      const types = (json as { types: Record<string, unknown> }).types;
      state.contents.set(sid, { types });
      res.writeHead(201, { "content-type": "application/json" });
      return res.end(JSON.stringify({ sid, account_sid: accountSid, friendly_name: (json as { friendly_name: string }).friendly_name, language: "en", types, variables: {}, url: `https://content.twilio.com/v1/Content/${sid}`, date_created: new Date().toISOString(), date_updated: new Date().toISOString(), links: {} }));
    }
    if (req.method === "POST" && path === `/2010-04-01/Accounts/${accountSid}/Messages.json`) {
      const params = new URLSearchParams(body);
      const v = checkTwilioMessage(params);
      const to = params.get("To") ?? "";
      const contentSid = params.get("ContentSid") ?? undefined;
      let content: SentWhatsApp["content"];
      if (contentSid) {
        const stored = state.contents.get(contentSid);
        if (!stored) v.push(`unknown ContentSid ${contentSid}`);
        else {
          let variables: Record<string, string> = {};
          try {
            variables = JSON.parse(params.get("ContentVariables") ?? "{}");
          } catch {
            v.push("ContentVariables is not JSON");
          }
          v.push(...checkResolvedContent(stored.types, variables));
          const [type, raw] = Object.entries(stored.types)[0]!;
          const t = raw as { body: string; actions?: Array<{ title: string; id: string }>; items?: Array<{ item: string; id: string; description?: string }> };
          content = {
            type,
            body: resolveVariables(t.body, variables),
            options: [
              ...(t.actions ?? []).map((a) => ({ title: resolveVariables(a.title, variables), id: resolveVariables(a.id, variables) })),
              ...(t.items ?? []).map((i) => ({ title: resolveVariables(i.item, variables), id: resolveVariables(i.id, variables), ...(i.description ? { description: resolveVariables(i.description, variables) } : {}) })),
            ],
          };
        }
      }
      if (v.length) {
        state.violations.push(...v);
        return refuse(res, 400, 21617, v.join("; "));
      }
      const statusCallback = params.get("StatusCallback") ?? undefined;
      if (statusCallback !== undefined && !/^https:\/\/[^\s]+$/.test(statusCallback)) v.push(`StatusCallback "${statusCallback}" is not an https URL`);
      if (contentSid && (params.get("Body") || params.getAll("MediaUrl").length)) v.push("a content template is sent with ContentSid and ContentVariables only: no Body or MediaUrl");
      if (v.length) {
        state.violations.push(...v);
        return refuse(res, 400, 21617, v.join("; "));
      }
      if (closed.has(to)) return refuse(res, 400, TWILIO_ERROR_OUTSIDE_WINDOW, "Failed to send freeform message because you are outside the allowed window.");
      const failure = failures.shift();
      if (failure) return refuse(res, failure.status, failure.code, "Injected failure");
      const sid = `SM${randomBytes(16).toString("hex")}`;
      const message: SentWhatsApp = {
        to,
        from: params.get("From") ?? params.get("MessagingServiceSid") ?? "",
        ...(params.get("MessagingServiceSid") ? { messagingServiceSid: params.get("MessagingServiceSid")! } : {}),
        mediaUrls: params.getAll("MediaUrl"),
        sid,
        ...(params.get("Body") ? { body: params.get("Body")! } : {}),
        ...(contentSid ? { contentSid } : {}),
        ...(statusCallback ? { statusCallback } : {}),
        ...(content ? { content } : {}),
      };
      state.sent.push(message);
      res.writeHead(201, { "content-type": "application/json" });
      // After the answer, as Twilio does: the statuses follow the accepted message.
      res.on("finish", () => void report(message, !(contentSid && approved.has(contentSid))).catch((error) => state.violations.push(`status callback failed: ${error}`)));
      return res.end(JSON.stringify({ sid, account_sid: accountSid, to, from: message.from, body: message.body ?? "", status: "queued", num_media: String(message.mediaUrls.length), date_created: new Date().toUTCString(), uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json` }));
    }
    return refuse(res, 404, 20404, `No route ${req.method} ${path}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    failNext: (n: number, status: number, code: number) => {
      for (let i = 0; i < n; i++) failures.push({ status, code });
    },
    closeWindow: (to: string) => void closed.add(to),
    closeWindowLate: (to: string) => void closedLate.add(to),
    addApprovedTemplate: (body: string) => {
      const sid = `HX${randomBytes(16).toString("hex")}`;
      state.contents.set(sid, { types: { "twilio/text": { body } } });
      approved.add(sid);
      return sid;
    },
    routeCallbacks: (publicUrl: string, local: string) => void routes.set(publicUrl, local),
    setStatusFlow: (statuses: string[]) => void (flow.statuses = statuses),
    callbacks,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
