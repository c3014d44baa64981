// The gateway test stack as the widget's browser tests meet it: the shop agent verifying HS256 identity
// tokens (identify and step-up), presented as the test gives (agent.yaml `widget`), and a site on another
// origin whose page the test writes, with the widget's script tag pointing at the stack.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { WidgetSettings } from "@caplo/shared";
import { releaseFromVersions, type AgentRelease } from "../../server/src/engine/release.ts";
import { mintIdentityToken } from "../../server/src/identity/index.ts";
import { startStack, type Stack, type StackOptions } from "../gateway/support/stack.ts";

const SECRET = "a-visitor-test-identity-secret-of-32-bytes!";

/** A signed identity token for customer `sub`, as the site's backend would make it. */
export const identityToken = (sub: string, level = "standard") => mintIdentityToken({ algorithm: "HS256", secret: SECRET, claims: { sub, ref: sub, level } });

/** The widget's script tag for the stack at `base`, with extra data attributes. */
export const widgetTag = (base: string, attributes = "") => `<script src="${base}/widget.js" data-agent="shop-agent"${attributes} async></script>`;

export type VisitorStack = { stack: Stack; siteUrl: string; close: () => Promise<void> };

/** `page(url, stack)`: the site's HTML for a request, or undefined for a 404. */
export async function startVisitorStack(
  options: Omit<StackOptions, "releases" | "gateway"> & { widget: WidgetSettings; channels?: AgentRelease["config"]["channels"]; page: (url: URL, stack: Stack) => string | undefined },
): Promise<VisitorStack> {
  let stack: Stack | undefined;
  const site: Server = createServer((req, res) => {
    const html = stack && options.page(new URL(req.url ?? "/", "http://site.invalid"), stack);
    if (html === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(html);
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  const siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
  const origins: string[] = [siteUrl];
  const { widget, channels, page: _page, ...stackOptions } = options;
  stack = await startStack({
    ...stackOptions,
    gateway: { secrets: (name) => (name === "IDENTITY_SECRET" ? SECRET : undefined) },
    releases: (version) => [
      releaseFromVersions({
        agent: "shop-agent",
        instructions: "Help shop customers.",
        origins,
        versions: [version],
        identity: { algorithm: "HS256", secret: "IDENTITY_SECRET", maxTokenAgeSeconds: 600, defaultLevel: "low" },
        widget,
        ...(channels && { channels }),
      }),
    ],
  });
  // The app's WebSocket comes from its iframe, served by the gateway: its Origin is the gateway's own.
  origins.push(stack.base);
  const started = stack;
  return {
    stack: started,
    siteUrl,
    close: async () => {
      await started.close();
      await new Promise<void>((resolve) => site.close(() => resolve()));
    },
  };
}
