// What the loader tells the app through the iframe URL: the agent, the host page's origin (the only
// one the app talks to), the locale, the accent colour, and whether the frame was made ahead of a click. Everything is checked; bad values fall back.

export interface Params {
  agent: string;
  /** The host page's origin: postMessage goes only there and is accepted only from there. */
  parentOrigin: string | null;
  locale: string;
  /** A #rgb / #rrggbb accent colour, or null for the theme's default. */
  color: string | null;
  /** data-theme: light or dark whatever the visitor's system says; null follows the system. */
  theme: "light" | "dark" | null;
  /**
   * The loader made this frame ahead of the visitor (after the page's load, or on hover of the launcher):
   * the app renders but connects only when the loader's init says the visitor wants the chat.
   */
  preload: boolean;
}

const LOCALE_PATTERN = /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$/;
export const COLOR_PATTERN = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
// An agent's name, or WORKSPACE/NAME for an agent of another workspace than default (docs/operators/workspaces.md).
export const AGENT_PATTERN = /^(?:[a-z][a-z0-9-]{1,39}\/)?[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export function readParams(search: string, ancestorOrigin: string | undefined, fallbackLocale: string): Params {
  const q = new URLSearchParams(search);
  const agent = q.get("agent") ?? "";
  const locale = q.get("locale") ?? "";
  const color = q.get("color") ?? "";
  const theme = q.get("theme");
  let parentOrigin: string | null = null;
  const claimed = q.get("origin");
  if (claimed) {
    try {
      const origin = new URL(claimed).origin;
      if (origin === claimed) parentOrigin = origin;
    } catch {
      parentOrigin = null;
    }
  }
  // Where the browser tells us who frames us (Chromium, Safari), that wins over what the URL claims.
  if (ancestorOrigin && ancestorOrigin !== "null") parentOrigin = ancestorOrigin;
  return {
    agent: AGENT_PATTERN.test(agent) ? agent : "",
    parentOrigin,
    locale: LOCALE_PATTERN.test(locale) ? locale : LOCALE_PATTERN.test(fallbackLocale) ? fallbackLocale : "en",
    color: COLOR_PATTERN.test(color) ? color : null,
    theme: theme === "light" || theme === "dark" ? theme : null,
    preload: q.get("preload") === "1",
  };
}
