// Test helpers: render a component inside the widget context with a recorder for what it sends, and
// build outbound messages the way the gateway sends them (checked against the shared zod schema).
import { cleanup, render } from "@testing-library/preact";
import { afterEach } from "vitest";
import type { Inbound, Outbound } from "@caplo/shared";
import { outboundSchema } from "@caplo/shared/messages";
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { defaultWidgetApi, WidgetContext, type WidgetApi } from "./context.ts";

// Vitest runs without globals, so testing-library cannot register its own cleanup.
afterEach(() => cleanup());

export interface Sent {
  id?: string;
  value?: string;
  event: Inbound;
}

/** Renders children in a widget context whose act/say record what would go to the gateway. */
export function renderInWidget(children: ComponentChildren, overrides: Partial<WidgetApi> = {}) {
  const sent: Sent[] = [];
  const opened: { url: string; origins: string[] }[] = [];
  const stepUps: { level: string; maxAuthAgeSeconds?: number }[] = [];
  function Harness() {
    const [used, setUsed] = useState<Record<string, string>>({});
    const api: WidgetApi = defaultWidgetApi({
      locale: "en-US",
      connected: true,
      used,
      act: (id, value, event) => {
        sent.push({ id, value, event });
        setUsed((u) => ({ ...u, [id]: value }));
        return true;
      },
      say: (text) => {
        sent.push({ event: { type: "message", text } });
        return true;
      },
      openPage: (url, origins) => opened.push({ url, origins }),
      requestStepUp: (level, maxAuthAgeSeconds) => stepUps.push({ level, maxAuthAgeSeconds }),
      ...overrides,
    });
    return <WidgetContext.Provider value={api}>{children}</WidgetContext.Provider>;
  }
  const result = render(<Harness />);
  return { ...result, sent, opened, stepUps };
}

/** An outbound message, parsed by the shared schema so tests only use what the gateway may send. */
export function outbound<T extends Outbound>(message: T): T {
  return outboundSchema.parse(message) as T;
}
