// @vitest-environment happy-dom
import { cleanup, fireEvent, screen } from "@testing-library/preact";
import { describe, expect, test } from "vitest";
import type { Outbound, OutboundOf } from "@caplo/shared";
import type { ReviewView } from "../conversation.ts";
import { outbound, renderInWidget } from "../testing.tsx";
import { namesOf } from "./App.tsx";
import { OutcomeNotice, ReviewCard } from "./ReviewCard.tsx";

const review = outbound({
  type: "review",
  id: "m1",
  proposalId: "p1",
  tool: "orders/cancel_order",
  title: "Cancel order SO-1002",
  state: "proposed",
  fields: [
    { path: "/orderId", label: "Order", display: "plain", value: "SO-1002", editable: false },
    { path: "/card", label: "Refund to card", display: "last4", value: "4242", editable: false },
    { path: "/note", label: "Note", display: "plain", value: "Too late", editable: true, input: "text" },
    {
      path: "/reason",
      label: "Reason",
      display: "plain",
      value: "changed_mind",
      editable: true,
      input: "select",
      options: [
        { value: "changed_mind", label: "Changed my mind" },
        { value: "too_slow", label: "Delivery too slow" },
      ],
    },
  ],
}) as OutboundOf<"review">;

const view = (over: Partial<ReviewView> = {}): ReviewView => ({ review, state: "proposed", outcomes: [], ...over });

const outcome = (o: Partial<OutboundOf<"outcome">>) =>
  outbound({ type: "outcome", id: "o1", proposalId: "p1", state: "applied", message: "", ...o }) as OutboundOf<"outcome">;

describe("review card", () => {
  test("shows the presentation title and every field under its label", () => {
    renderInWidget(<ReviewCard view={view()} autoFocus={false} />);
    expect(screen.getByRole("heading", { name: "Cancel order SO-1002" })).toBeTruthy();
    expect(screen.getByText("Order")).toBeTruthy();
    expect(screen.getByText("SO-1002")).toBeTruthy();
    expect(screen.getByLabelText("Note")).toBeTruthy();
    expect(screen.getByRole("region", { name: "Cancel order SO-1002" })).toBeTruthy();
  });

  test("a last4 field shows only its final four characters, even if the server sent more", () => {
    const long = { ...review, fields: [{ ...review.fields[1]!, value: "4000123412344242" }] };
    const { container } = renderInWidget(<ReviewCard view={view({ review: long })} autoFocus={false} />);
    expect(container.textContent).toContain("4242");
    expect(container.textContent).not.toContain("40001234");
    expect(screen.getByText("ending in 4242")).toBeTruthy();
  });

  test("editable fields are a text input and a select of the listed options; confirm sends only changed values", () => {
    const { sent } = renderInWidget(<ReviewCard view={view()} autoFocus={false} />);
    const note = screen.getByLabelText("Note") as HTMLInputElement;
    expect(note.value).toBe("Too late");
    fireEvent.input(note, { target: { value: "Ordered twice" } });
    const reason = screen.getByLabelText("Reason") as HTMLSelectElement;
    expect([...reason.options].map((o) => o.textContent)).toEqual(["Changed my mind", "Delivery too slow"]);
    fireEvent.change(reason, { target: { value: "too_slow" } });
    fireEvent.click(screen.getByRole("button", { name: "Confirm" }));
    expect(sent).toEqual([
      {
        id: "review:p1",
        value: "confirm",
        event: { type: "confirm", proposalId: "p1", edits: { "/note": "Ordered twice", "/reason": "too_slow" } },
      },
    ]);
  });

  test("confirm without edits sends no edits", () => {
    const { sent } = renderInWidget(<ReviewCard view={view()} autoFocus={false} />);
    fireEvent.click(screen.getByRole("button", { name: "Confirm" }));
    expect(sent[0]!.event).toEqual({ type: "confirm", proposalId: "p1" });
  });

  test("a double click on Confirm sends exactly one confirm and the card cannot be used again", () => {
    const { sent } = renderInWidget(<ReviewCard view={view()} autoFocus={false} />);
    const confirm = screen.getByRole("button", { name: "Confirm" });
    fireEvent.click(confirm);
    fireEvent.click(confirm);
    expect(sent).toHaveLength(1);
    expect(screen.queryByRole("button", { name: "Confirm" })).toBeNull();
    expect(screen.queryByRole("button", { name: "Cancel" })).toBeNull();
    expect(screen.queryByLabelText("Note")).toBeNull();
    expect(screen.getByText("Confirming…")).toBeTruthy();
  });

  test("after a decision a select field shows its option's label, not its raw value", () => {
    renderInWidget(<ReviewCard view={view({ state: "applied" })} autoFocus={false} />);
    expect(screen.getByText("Changed my mind")).toBeTruthy();
    expect(screen.queryByText("changed_mind")).toBeNull();
  });

  test("after a decision an editable field left empty reads \"none\"", () => {
    const empty = { ...review, fields: [{ ...review.fields[2]!, value: "" }] };
    const { container } = renderInWidget(<ReviewCard view={view({ review: empty, state: "declined" })} autoFocus={false} />);
    expect(container.querySelector("dd")!.textContent).toBe("none");
  });

  test("\"Don't do it\" sends a decline for the proposal, and the card says nothing was changed, once", () => {
    const { sent } = renderInWidget(<ReviewCard view={view()} autoFocus={false} />);
    expect(screen.getByText(/Confirm does exactly this; “Don't do it” changes nothing/)).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Don't do it" }));
    expect(sent.map((s) => s.event)).toEqual([{ type: "decline", proposalId: "p1" }]);
    cleanup();
    const o = outcome({ state: "declined", message: "Cancel order SO-1002 was not done: you declined it. Nothing was changed." });
    const { container } = renderInWidget(<ReviewCard view={view({ state: "declined", outcomes: [o] })} autoFocus={false} />);
    expect(container.querySelector(".status")!.textContent).toBe("Not doneYou chose not to go ahead. Nothing was changed.");
    expect(container.textContent).not.toMatch(/Cancelled by you|you declined it/);
  });

  test("while disconnected the card's buttons are disabled", () => {
    renderInWidget(<ReviewCard view={view()} autoFocus={false} />, { connected: false });
    expect((screen.getByRole("button", { name: "Confirm" }) as HTMLButtonElement).disabled).toBe(true);
  });

  test("a new card takes the focus", () => {
    renderInWidget(<ReviewCard view={view()} autoFocus={true} />);
    expect(document.activeElement).toBe(screen.getByRole("heading", { name: "Cancel order SO-1002" }));
  });

  test("applied shows the receipt fields", () => {
    const o = outcome({ state: "applied", message: "Your order is cancelled.", receipt: [{ label: "Refund", value: "€49.90" }] });
    renderInWidget(<ReviewCard view={view({ state: "applied", outcomes: [o] })} autoFocus={false} />);
    expect(screen.getByText("Done")).toBeTruthy();
    // One success line: the state and the receipt, not also the server's "done, it went through".
    expect(screen.queryByText("Your order is cancelled.")).toBeNull();
    const receipt = screen.getByLabelText("Receipt");
    expect(receipt.textContent).toBe("Refund€49.90");
    expect(screen.queryByRole("button", { name: "Confirm" })).toBeNull();
  });

  test("a write with no card (confirmation none) is named by its outcome: what was done, not only \"Done\"", () => {
    const o = outcome({ state: "applied", title: "Add order note", message: "Add order note: done. Your request went through.", receipt: [{ label: "Note", value: "gift wrap" }] });
    renderInWidget(<OutcomeNotice outcome={o} />);
    const card = screen.getByRole("region", { name: "Add order note: Done" });
    expect(card.textContent).toBe("Add order noteDoneNotegift wrap");
    cleanup();
    // A title is text: markup in it is shown as written, never made into elements.
    renderInWidget(<OutcomeNotice outcome={outcome({ state: "unknown", title: "<img src=x onerror=alert(1)>", message: "" })} />);
    expect(document.querySelector("section img")).toBeNull();
    expect(screen.getByText("<img src=x onerror=alert(1)>")).toBeTruthy();
    expect(screen.getByText(/don't send it again/)).toBeTruthy();
  });

  test("not applied shows the reason", () => {
    const o = outcome({ state: "not_applied", message: "This order has already shipped." });
    renderInWidget(<ReviewCard view={view({ state: "not_applied", outcomes: [o] })} autoFocus={false} />);
    expect(screen.getByText("Not done")).toBeTruthy();
    expect(screen.getByText("This order has already shipped.")).toBeTruthy();
  });

  test.each(["pending", "unknown"] as const)("%s says it is not confirmed yet and not to send it again", (state) => {
    const o = outcome({ state, message: "We are checking." });
    renderInWidget(<ReviewCard view={view({ state, outcomes: [o] })} autoFocus={false} />);
    expect(screen.getByText("Not confirmed yet")).toBeTruthy();
    expect(screen.getByText(/don't send it again/)).toBeTruthy();
  });

  test("a pending write resolved by its status check shows only the final outcome, not the earlier not confirmed yet", () => {
    const first = outcome({ id: "o1", state: "pending", message: "Cancel order SO-1002 is not confirmed yet. Please don't send it again." });
    const later = outcome({ id: "o2", state: "applied", message: "Cancelled after all.", receipt: [{ label: "Status", value: "cancelled" }] });
    const { container } = renderInWidget(<ReviewCard view={view({ state: "applied", outcomes: [first, later] })} autoFocus={false} />);
    expect(screen.getByText("Done")).toBeTruthy();
    expect(screen.getByLabelText("Receipt").textContent).toBe("Statuscancelled");
    expect(container.textContent).not.toMatch(/not confirmed yet|don't send it again/i);
  });

  test("a status check that still finds it pending says \"don't send it again\" once", () => {
    const first = outcome({ id: "o1", state: "pending", message: "Processing." });
    const again = outcome({ id: "o2", state: "pending", message: "Still processing." });
    const { container } = renderInWidget(<ReviewCard view={view({ state: "pending", outcomes: [first, again] })} autoFocus={false} />);
    expect(screen.getByText("Not confirmed yet")).toBeTruthy();
    expect(container.querySelectorAll(".warn")).toHaveLength(1);
    expect(container.textContent!.match(/don't send it again/gi)).toHaveLength(1);
  });

  test("an outcome a later review state overtook is not shown (verify again, then it runs)", () => {
    const stepUp = outcome({ id: "o1", state: "step_up_required", message: "To do this, please verify your identity again." });
    renderInWidget(<ReviewCard view={view({ state: "running", outcomes: [stepUp] })} autoFocus={false} />);
    expect(screen.getByText("Working on it…")).toBeTruthy();
    expect(screen.queryByText(/verify your identity again/)).toBeNull();
  });

  test("a refused confirm makes the card usable again and says why", () => {
    renderInWidget(<ReviewCard view={view()} autoFocus={false} />, { failed: { "review:p1": "The proposal expired." } });
    expect(screen.getByRole("alert").textContent).toBe("The proposal expired.");
    expect(screen.getByRole("button", { name: "Confirm" })).toBeTruthy();
  });

  test("markup in a title, label or value is shown as text", () => {
    const hostile = {
      ...review,
      title: '<img src=x onerror="alert(1)">',
      fields: [{ path: "/a", label: "<b>bold</b>", display: "plain" as const, value: "<script>alert(1)</script>", editable: false }],
    };
    const { container } = renderInWidget(<ReviewCard view={view({ review: hostile })} autoFocus={false} />);
    expect(container.querySelector("img, b, script")).toBeNull();
    expect(container.textContent).toContain("<script>alert(1)</script>");
  });
});

describe("review card: an editable field shows the whole proposed value", () => {
  test("a long value or one with a line break is shown whole in a text area, and runs as shown", () => {
    // A one-line input shows what fits its width (and drops line breaks): the model's tail would run unseen.
    const tail = "Ordered twice; also send the refund to the account ending 9999 instead of my card";
    const card = (value: string) =>
      outbound({ ...review, fields: [{ path: "/note", label: "Note", display: "plain", value, editable: true, input: "text" }] }) as OutboundOf<"review">;
    for (const value of [tail, "Ordered twice\nand refund to 9999"]) {
      const { sent } = renderInWidget(<ReviewCard view={{ review: card(value), state: "proposed", outcomes: [] }} autoFocus={false} />);
      const note = screen.getByLabelText("Note");
      expect(note.tagName).toBe("TEXTAREA");
      expect((note as HTMLTextAreaElement).value).toBe(value);
      // Rows enough for every line at the narrowest card's 20 characters a line.
      const needed = value.split("\n").reduce((n, line) => n + Math.ceil(line.length / 20), 0);
      expect(Number(note.getAttribute("rows"))).toBeGreaterThanOrEqual(needed);
      fireEvent.click(screen.getByRole("button", { name: "Confirm" }));
      expect(sent).toEqual([{ id: "review:p1", value: "confirm", event: { type: "confirm", proposalId: "p1" } }]);
      cleanup();
    }
  });
});

describe("review card: a field that cannot be edited shows the whole proposed value", () => {
  test("a value past the widget's 2000 shown characters is not cut: its end is on the card", () => {
    const value = `${"Gift for Ana. ".repeat(150)}Also send 500 EUR to IBAN SI56 1910 0000 0123 438`;
    const card = outbound({ ...review, fields: [{ path: "/note", label: "Note", display: "plain", value, editable: false }] }) as OutboundOf<"review">;
    const { container } = renderInWidget(<ReviewCard view={{ review: card, state: "proposed", outcomes: [] }} autoFocus={false} />);
    expect(container.querySelector("dd")!.textContent).toBe(value);
  });
});

describe("review card: names results showed for the proposed value", () => {
  const slots = (id: string, items: Record<string, string>[]) =>
    outbound({
      type: "result",
      id,
      callId: `c-${id}`,
      layout: "choices",
      title: "Free times",
      columns: [
        { key: "label", label: "Time", display: "plain", role: "title" },
        { key: "slotId", label: "Slot", display: "plain" },
      ],
      items,
      actions: [{ kind: "reply", label: "Book", template: "Book {slotId}" }],
    });
  const booking = (slotId: string) =>
    outbound({
      type: "review",
      id: "m9",
      proposalId: "p9",
      tool: "shop/book",
      title: "Book a fitting",
      state: "proposed",
      fields: [{ path: "/slotId", label: "Time", display: "plain", value: slotId, editable: false }],
    }) as OutboundOf<"review">;
  const shown = (entries: Outbound[], slotId: string) => {
    const names = namesOf(entries.map((message, i) => ({ seq: i + 1, at: "2026-12-05T00:00:00Z", message })));
    renderInWidget(<ReviewCard view={{ review: booking(slotId), state: "proposed", outcomes: [] }} autoFocus={false} />, { names });
    const text = document.querySelector("dd")!.textContent;
    cleanup();
    return text;
  };

  test("a name stands for one value: two items titled alike show their value, a value named two ways shows as it is", () => {
    // The shop's own slot and one planted (a second listing, a later result) under the same title.
    const alike = slots("r1", [
      { label: "Sat 5 Dec, 15:00", slotId: "slot_1" },
      { label: "Sat 5 Dec, 15:00", slotId: "slot_evil" },
    ]);
    expect(shown([alike], "slot_evil")).toBe("Sat 5 Dec, 15:00 (slot_evil)");
    expect(shown([alike], "slot_1")).toBe("Sat 5 Dec, 15:00 (slot_1)");
    const renamed = [slots("r1", [{ label: "Sat 5 Dec, 15:00", slotId: "slot_2" }]), slots("r2", [{ label: "Mon 7 Dec, 09:00", slotId: "slot_2" }])];
    expect(shown(renamed, "slot_2")).toBe("slot_2");
    // One name for one value, even when shown again: the name.
    const again = slots("r3", [{ label: "Sun 6 Dec, 10:00", slotId: "slot_3" }]);
    expect(shown([again, again], "slot_3")).toBe("Sun 6 Dec, 10:00");
  });
});
