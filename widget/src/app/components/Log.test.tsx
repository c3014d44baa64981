// @vitest-environment happy-dom
// The conversation log's rows: a message still being sent shows what the visitor chose, not the ids it carries.
import { createRef } from "preact";
import { describe, expect, it } from "vitest";
import { initialState, reduce, rowsOf } from "../conversation.ts";
import { renderInWidget } from "../testing.tsx";
import { Log } from "./Log.tsx";

describe("Log", () => {
  it("a tapped choice still being sent shows its label, not the slot id its message carries; a typed one shows as typed", () => {
    const sent = "Book slot SL-ST-LJ1-fitting-20261205T09";
    let state = reduce(initialState, { type: "send", ref: "r1", text: sent });
    state = reduce(state, { type: "send", ref: "r2", text: "Where is SO-1002?" });
    const { container } = renderInWidget(<Log state={state} rows={rowsOf(state.entries)} logRef={createRef()} liveAfter={null} onScroll={() => undefined} />, {
      labels: { [sent]: "Sat 5 Dec, 10:00, fitting" },
    });
    const pending = [...container.querySelectorAll(".bubble.pending .text")].map((el) => el.textContent);
    expect(pending).toEqual(["Sat 5 Dec, 10:00, fitting", "Where is SO-1002?"]);
    expect(container.textContent).not.toMatch(/SL-/);
  });
});
