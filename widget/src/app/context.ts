// What every component may ask of the app: the strings and locale, sending the visitor's actions,
// remembering what was already used, and opening a page panel. One context, so components stay small.
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Inbound, Rating, WidgetAgent } from "@caplo/shared";
import { en, type Strings } from "./i18n.ts";

export interface WidgetApi {
  t: Strings;
  locale: string;
  /**
   * Sends a visitor action taken on card `id` and marks the card used with `value` (so it works once);
   * false when it could not go out (not connected) and the card stays usable.
   */
  act: (id: string, value: string, event: Inbound, label?: string) => boolean;
  /**
   * Rates the agent's reply stored as event `seq` (null takes the rating back); false when it could not go
   * out. Absent where replies are not rated (the team console shows the widget's rows too).
   */
  rate?: (seq: number, rating: Rating | null) => boolean;
  /** Sends a visitor text message, shown at once as in flight. */
  say: (text: string) => boolean;
  used: Record<string, string>;
  /** Why the gateway refused an action on a card, by card id. */
  failed: Record<string, string>;
  connected: boolean;
  /** Opens a safe URL in the panel over the chat; origins are the ones it may post messages from. */
  openPage: (url: string, origins: string[], title: string) => void;
  /** Asks the host page to verify the customer again. */
  requestStepUp: (level: string, maxAuthAgeSeconds?: number) => void;
  /** How many times the customer was verified on this page so far (a step-up prompt sees its request answered). */
  verifications: number;
  /** The server says the visitor is verified. */
  verified: boolean;
  /**
   * The id of the latest step-up prompt still asking: only it has the button (one prompt at a time). A read's
   * prompt asks until the visitor writes again; a write's while its write waits for the customer to verify.
   */
  latestStepUp: string | null;
  /** Each write's state as of its latest review or outcome event, by proposal id (a write's step-up prompt follows it). */
  writeStates: Record<string, string>;
  /** Remembers what a row showed (kept with what the visitor used, so a reload and the transcript say the same). */
  keep: (key: string, value: string) => void;
  /** What the visitor tapped, by the message it sent: a choice's label instead of the ids in its reply. */
  labels: Record<string, string>;
  /** The site owner's map tile source (agent.yaml widget.mapTiles): the map layout draws a real map with it. */
  mapTiles?: WidgetAgent["mapTiles"];
  /** Names the visitor was shown for ids: `key\u0000value` → the title of the result item that had that value. */
  names: Record<string, string>;
  /**
   * Messages show their time of day. False in the app until its time format is made (the first loads the
   * browser's locale data, a task of its own when idle once the chat is open): until then each row keeps
   * the time's line, empty.
   */
  times: boolean;
}

/**
 * The context where nothing can be sent: the strings, no connection, nothing used or failed, no page panel.
 * The app's default before it connects, and the team console's read-only rows; `overrides` sets the rest.
 */
export function defaultWidgetApi(overrides: Partial<WidgetApi> = {}): WidgetApi {
  const nothingSent = () => false;
  return {
    t: en,
    locale: "en",
    act: nothingSent,
    say: nothingSent,
    used: {},
    failed: {},
    connected: false,
    openPage: () => undefined,
    requestStepUp: () => undefined,
    verifications: 0,
    verified: false,
    latestStepUp: null,
    times: true,
    writeStates: {},
    keep: () => undefined,
    labels: {},
    names: {},
    ...overrides,
  };
}

export const WidgetContext = createContext<WidgetApi>(defaultWidgetApi());

export const useWidget = (): WidgetApi => useContext(WidgetContext);
