// Settings of `caplo demo` only (its flags win): the demo shop's port and pace, and where it keeps its data.
import { PORT_MAX } from "./serve.ts";
import { setting, text, wholeNumber } from "../setting.ts";

export const demoSettings = {
  CAPLO_DEMO_SHOP_PORT: setting(
    { name: "CAPLO_DEMO_SHOP_PORT", flag: "--shop-port N (demo)", rule: `a whole number from 0 to ${PORT_MAX}`, example: "4100", default: "4100", commands: ["demo"], doc: "the demo shop API's port (0 picks a free one; the help articles' page origins follow it)" },
    wholeNumber(0, PORT_MAX).optional(),
  ),
  CAPLO_DEMO_GATEWAY_PORT: setting(
    { name: "CAPLO_DEMO_GATEWAY_PORT", flag: "--gateway-port N (demo)", rule: `a whole number from 0 to ${PORT_MAX}`, example: "4200", default: "4200", commands: ["demo"], doc: "the demo gateway's port: where `/webhooks/<platform>` is reached (through a tunnel) in the demo" },
    wholeNumber(0, PORT_MAX).optional(),
  ),
  CAPLO_DEMO_DIR: setting(
    { name: "CAPLO_DEMO_DIR", flag: "--data-dir DIR (demo)", rule: "a folder", example: ".caplo/demo", default: "`.caplo/demo`", commands: ["demo"], doc: "the demo's SQLite store, releases and shop state; delete it to start over" },
    text().optional(),
  ),
  CAPLO_DEMO_PENDING_MS: setting(
    { name: "CAPLO_DEMO_PENDING_MS", flag: "--pending-ms N (demo)", rule: "a whole number from 0 to 600000", example: "3000", default: "3000", commands: ["demo"], doc: "how long the demo shop takes to finish a pending cancellation, ms" },
    wholeNumber(0, 600_000).optional(),
  ),
};
