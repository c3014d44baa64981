// Settings of the messaging channels (docs/channels.md explains each step). A platform is on when its
// first credential is set; channels/channelSetup.ts then checks every variable it needs together and
// refuses a missing or malformed one with channel_config_invalid when the server starts.
import { setting, text, type SettingMeta } from "../setting.ts";

type ChannelMeta = Omit<SettingMeta, "commands" | "checkedBy" | "default"> & { default?: string };
const channel = (meta: ChannelMeta) => setting({ default: "—", ...meta, commands: ["serve"], checkedBy: "channels/channelSetup.ts (channel_config_invalid)" }, text().optional());

export const channelSettings = {
  CAPLO_PUBLIC_URL: setting(
    {
      name: "CAPLO_PUBLIC_URL",
      rule: "this server's public URL as browsers reach it (https for the messaging channels)",
      example: "https://caplo.shop.example",
      default: "—",
      commands: ["serve"],
      checkedBy: "gateway/settings.ts and channels/channelSetup.ts",
      doc: "this server's public address as browsers reach it: the widget app's sockets come from its origin (besides the address serve listens on, which is always one; the `Host` header is never trusted, see [The widget protocol](../widget-protocol.md#connecting)), and with messaging channels the base of signed webhook URLs and of files sent to customers (https there; without it a file is not sent and the customer is told). `caplo serve` prints the widget app origins it accepts at start",
    },
    text().optional(),
  ),
  CAPLO_TWILIO_ACCOUNT_SID: channel({ name: "CAPLO_TWILIO_ACCOUNT_SID", rule: "AC followed by 32 hex digits", example: "AC0123456789abcdef0123456789abcdef", doc: "WhatsApp through Twilio: the Account SID; turns WhatsApp on" }),
  CAPLO_TWILIO_AUTH_TOKEN: channel({ name: "CAPLO_TWILIO_AUTH_TOKEN", rule: "32 hex digits", example: "0123456789abcdef0123456789abcdef", doc: "the Twilio account's Auth Token: it checks Twilio's webhook signatures and authenticates sending" }),
  CAPLO_WHATSAPP_FROM: channel({ name: "CAPLO_WHATSAPP_FROM", rule: "whatsapp:+<E.164 number> or a Messaging Service SID (MG…)", example: "whatsapp:+15551234567", doc: "the WhatsApp sender" }),
  CAPLO_WHATSAPP_WEBHOOK_URL: channel({ name: "CAPLO_WHATSAPP_WEBHOOK_URL", rule: "the https URL entered in Twilio", example: "https://proxy.example/wa", default: "`CAPLO_PUBLIC_URL/webhooks/whatsapp`", doc: "the exact webhook URL entered in Twilio, when it is not `CAPLO_PUBLIC_URL/webhooks/whatsapp`" }),
  CAPLO_TWILIO_API_BASE: channel({ name: "CAPLO_TWILIO_API_BASE", rule: "an http(s) origin", example: "https://egress.internal", default: "Twilio's", doc: "an egress gateway that forwards to Twilio's API hosts" }),
  CAPLO_MESSENGER_PAGE_TOKEN: channel({ name: "CAPLO_MESSENGER_PAGE_TOKEN", rule: "a Page access token (20 characters or more, no spaces)", example: "EAAG…", doc: "Messenger: a Page access token for your page; turns Messenger on" }),
  CAPLO_MESSENGER_PAGE_TOKENS: channel({ name: "CAPLO_MESSENGER_PAGE_TOKENS", rule: "pageId=token pairs, comma-separated", example: "205000000000002=EAAG…", doc: "more Messenger pages and their tokens" }),
  CAPLO_META_APP_SECRET: channel({ name: "CAPLO_META_APP_SECRET", rule: "32 hex digits", example: "0123456789abcdef0123456789abcdef", doc: "the Meta app secret: it checks `X-Hub-Signature-256` on every Messenger (and Facebook Login Instagram) webhook" }),
  CAPLO_META_VERIFY_TOKEN: channel({ name: "CAPLO_META_VERIFY_TOKEN", rule: "16 to 128 letters, digits or ._~-", example: "verify-token-0123456789", doc: "the verify token you also enter in the Meta app dashboard" }),
  CAPLO_GRAPH_API_BASE: channel({ name: "CAPLO_GRAPH_API_BASE", rule: "an http(s) origin", example: "https://egress.internal", default: "`https://graph.facebook.com`", doc: "an egress gateway to the Graph API" }),
  CAPLO_GRAPH_API_VERSION: channel({ name: "CAPLO_GRAPH_API_VERSION", rule: "a Graph API version", example: "v21.0", default: "`v21.0`", doc: "the Graph API version" }),
  CAPLO_INSTAGRAM_TOKEN: channel({ name: "CAPLO_INSTAGRAM_TOKEN", rule: "an Instagram User token (IG…) or a Page access token (EAA…)", example: "IGAA…", doc: "Instagram: the access token of your professional account; turns Instagram on" }),
  CAPLO_INSTAGRAM_TOKENS: channel({ name: "CAPLO_INSTAGRAM_TOKENS", rule: "accountId=token pairs, comma-separated", example: "17841400000000002=IGAA…", doc: "more Instagram accounts and their tokens" }),
  CAPLO_INSTAGRAM_APP_SECRET: channel({ name: "CAPLO_INSTAGRAM_APP_SECRET", rule: "32 hex digits", example: "0123456789abcdef0123456789abcdef", default: "`CAPLO_META_APP_SECRET`", doc: "Business Login for Instagram: the Instagram app secret, which signs Instagram's webhooks" }),
  CAPLO_INSTAGRAM_API_BASE: channel({ name: "CAPLO_INSTAGRAM_API_BASE", rule: "an http(s) origin", example: "https://egress.internal", default: "chosen by the token", doc: "an egress gateway for Instagram's sends" }),
  CAPLO_WHATSAPP_AGENTS: channel({ name: "CAPLO_WHATSAPP_AGENTS", rule: "number=agent pairs, comma-separated", example: "whatsapp:+15551234567=shop", doc: "which agent answers each WhatsApp number" }),
  CAPLO_MESSENGER_AGENTS: channel({ name: "CAPLO_MESSENGER_AGENTS", rule: "pageId=agent pairs, comma-separated", example: "105000000000001=shop", doc: "which agent answers each Facebook page" }),
  CAPLO_INSTAGRAM_AGENTS: channel({ name: "CAPLO_INSTAGRAM_AGENTS", rule: "accountId=agent pairs, comma-separated", example: "17841400000000001=shop", doc: "which agent answers each Instagram account" }),
  CAPLO_WHATSAPP_AGENT: channel({ name: "CAPLO_WHATSAPP_AGENT", rule: "an agent name", example: "shop", default: "the first `--agent` of the default workspace", doc: "the agent for WhatsApp numbers the map does not name" }),
  CAPLO_MESSENGER_AGENT: channel({ name: "CAPLO_MESSENGER_AGENT", rule: "an agent name", example: "shop", default: "the first `--agent` of the default workspace", doc: "the agent for pages the map does not name" }),
  CAPLO_INSTAGRAM_AGENT: channel({ name: "CAPLO_INSTAGRAM_AGENT", rule: "an agent name", example: "shop", default: "the first `--agent` of the default workspace", doc: "the agent for Instagram accounts the map does not name" }),
  CAPLO_WORKSPACE_CHANNELS: channel({
    name: "CAPLO_WORKSPACE_CHANNELS",
    rule: "workspace=file pairs, comma-separated",
    example: "acme=/etc/caplo/acme-channels.env",
    doc: "each workspace's own messaging channels: a file per workspace holding the channel variables above (its own Twilio account, Meta app, numbers, pages and agents); its webhooks are at `/webhooks/@<workspace>/<platform>` (see [Workspaces](workspaces.md#channels)). The variables above are the default workspace's",
  }),
};
