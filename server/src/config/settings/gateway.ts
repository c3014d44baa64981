// Settings of the gateway: the proxies trusted to name a client's address, the per-address limits on the
// widget's sockets and new conversations, the hello timeout, and the team API's members.
import { setting, text, wholeNumber } from "../setting.ts";

export const gatewaySettings = {
  CAPLO_TRUSTED_PROXIES: setting(
    {
      name: "CAPLO_TRUSTED_PROXIES",
      checkedBy: "gateway/settings.ts (setting_invalid)",
      rule: "proxy addresses or CIDR ranges, comma-separated",
      example: "10.0.0.0/8,fd00::/8",
      default: "— (X-Forwarded-For is not believed)",
      commands: ["serve"],
      doc: "proxies whose `X-Forwarded-For` names the widget client's address for the per-address limits, read from the right (default none: the socket's peer; the header is never believed from anyone else). See [Behind a reverse proxy](../widget-protocol.md#behind-a-reverse-proxy)",
    },
    text().optional(),
  ),
  CAPLO_CONSOLE_PORT: setting(
    {
      name: "CAPLO_CONSOLE_PORT",
      checkedBy: "gateway/settings.ts (setting_invalid)",
      rule: "a whole number from 0 to 65535 (not CAPLO_PORT's)",
      example: "8081",
      default: "— (the console is served on CAPLO_PORT)",
      commands: ["serve"],
      doc: "serve the team console on a port of its own, a browser origin apart from the widget app's: `/console`, its sign-in and session cookie, and the team API for that cookie answer only there (the team API with a bearer token answers on both). Script that ever ran in the widget app (which shows model and tool content) then cannot read or change anything with a member's session. See [The team console](../console.md#its-own-origin)",
    },
    wholeNumber(0, 65_535).optional(),
  ),
  CAPLO_CONSOLE_PUBLIC_URL: setting(
    {
      name: "CAPLO_CONSOLE_PUBLIC_URL",
      checkedBy: "gateway/settings.ts (setting_invalid)",
      rule: "the console's public URL as browsers reach it (http or https), with CAPLO_CONSOLE_PORT",
      example: "https://console.shop.example",
      default: "— (the console port's own address)",
      commands: ["serve"],
      doc: "where browsers reach the console's port (behind a proxy): a change made with a console session must come from a page of this origin or the console port's own address",
    },
    text().optional(),
  ),
  CAPLO_WIDGET_SOCKETS_PER_ADDRESS: setting(
    { name: "CAPLO_WIDGET_SOCKETS_PER_ADDRESS", rule: "a whole number from 1 to 1000000", example: "30", default: "30", commands: ["serve"], doc: "open widget sockets per client address on this node (an IPv6 client counts by its /64); more are told `too_many_connections` and closed with 1013" },
    wholeNumber(1, 1_000_000).optional(),
  ),
  CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE: setting(
    { name: "CAPLO_WIDGET_CONVERSATIONS_PER_MINUTE", rule: "a whole number from 1 to 1000000", example: "20", default: "20", commands: ["serve"], doc: "new widget conversations per client address per minute on this node (that many at once, then one every 60/N seconds; resuming is not new); more are told `too_many_conversations` and closed with 1013" },
    wholeNumber(1, 1_000_000).optional(),
  ),
  CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS: setting(
    { name: "CAPLO_WIDGET_HELLO_TIMEOUT_SECONDS", rule: "a whole number of seconds from 1 to 600", example: "10", default: "10", commands: ["serve"], doc: "a widget socket that says no `hello` this long is told `hello_timeout` and closed with 4408" },
    wholeNumber(1, 600).optional(),
  ),
  CAPLO_TEAM_MEMBERS: setting(
    {
      name: "CAPLO_TEAM_MEMBERS",
      rule: "name=sha256:<64 hex digits> entries, comma-separated, names and hashes each unique",
      example: "ana=sha256:0f1e…",
      default: "— (only members added with `caplo member add`; with neither the team API answers 503)",
      commands: ["serve"],
      checkedBy: "gateway/teamMembers.ts (team_members_invalid)",
      doc: "team members this node configures, each with a token of their own (`caplo team token NAME` makes a token and its entry), `workspace/name` outside the default workspace; besides the members `caplo member add` keeps in the store (a name is one member's in its workspace: a clash stops the start with `team_member_conflict`). See [Team API and handoff](team-api.md)",
    },
    text().optional(),
  ),
  // One shared token let anyone holding it write as any member: members now authenticate individually.
  CAPLO_TEAM_TOKEN: setting(
    {
      name: "CAPLO_TEAM_TOKEN",
      code: "team_token_replaced",
      bareMessage: true,
      rule: "the shared team token is no longer accepted: give each member a token of their own in CAPLO_TEAM_MEMBERS (caplo team token NAME; docs/operators/team-api.md)",
      example: "(unset)",
      default: "—",
      commands: ["serve"],
      doc: "no longer accepted: a server that has it set refuses to start with `team_token_replaced`; use `CAPLO_TEAM_MEMBERS`",
    },
    text().max(0).optional(),
  ),
};
