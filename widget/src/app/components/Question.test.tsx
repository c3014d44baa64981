// @vitest-environment happy-dom
import { fireEvent, screen } from "@testing-library/preact";
import { describe, expect, test } from "vitest";
import type { OutboundOf } from "@caplo/shared";
import { outbound, renderInWidget } from "../testing.tsx";
import { Question } from "./Question.tsx";

type Q = OutboundOf<"question">;
const form = outbound({
  type: "question",
  id: "q1",
  elicitationId: "e1",
  style: "form",
  message: "We need a few details to find your booking.",
  fields: [
    { name: "email", title: "Email", kind: "string", required: true, format: "email" },
    { name: "name", title: "Name", kind: "string", required: false, minLength: 2, maxLength: 5 },
    { name: "guests", title: "Guests", kind: "integer", required: true, minimum: 1, maximum: 8 },
    { name: "size", title: "Size", kind: "choice", required: true, options: [{ value: "s", label: "Small" }, { value: "l", label: "Large" }] },
    { name: "news", title: "Send me news", kind: "boolean", required: false },
  ],
}) as Q;

describe("elicitation form", () => {
  test("required fields, formats and bounds are checked before anything is sent", () => {
    const { sent } = renderInWidget(<Question question={form} />);
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    expect(sent).toEqual([]);
    expect(screen.getAllByText("Required")).toHaveLength(3);
    expect(screen.getByLabelText(/Email/).getAttribute("aria-invalid")).toBe("true");
    expect(document.activeElement).toBe(screen.getByLabelText(/Email/));

    fireEvent.input(screen.getByLabelText(/Email/), { target: { value: "not-an-email" } });
    fireEvent.input(screen.getByLabelText(/Name/), { target: { value: "A" } });
    fireEvent.input(screen.getByLabelText(/Guests/), { target: { value: "9" } });
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    expect(sent).toEqual([]);
    expect(screen.getByText("Enter an email address")).toBeTruthy();
    expect(screen.getByText("At least 2 characters")).toBeTruthy();
    expect(screen.getByText("At most 8")).toBeTruthy();

    fireEvent.input(screen.getByLabelText(/Guests/), { target: { value: "2.5" } });
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    expect(screen.getByText("Enter a whole number")).toBeTruthy();
  });

  test("a valid form sends typed values once and is then disabled", () => {
    const { sent } = renderInWidget(<Question question={form} />);
    fireEvent.input(screen.getByLabelText(/Email/), { target: { value: "ana@example.com" } });
    fireEvent.input(screen.getByLabelText(/Guests/), { target: { value: "8" } });
    fireEvent.change(screen.getByLabelText(/Size/), { target: { value: "l" } });
    fireEvent.click(screen.getByLabelText("Send me news"));
    fireEvent.click(screen.getByRole("button", { name: "Send" }));
    fireEvent.submit(screen.getByLabelText(/Email/).closest("form")!);
    expect(sent.map((s) => s.event)).toEqual([
      { type: "answer", elicitationId: "e1", action: "accept", content: { email: "ana@example.com", guests: 8, size: "l", news: true } },
    ]);
    expect(screen.getByText("Answered")).toBeTruthy();
    expect((screen.getByLabelText(/Email/).closest("fieldset") as HTMLFieldSetElement).disabled).toBe(true);
  });

  test("Skip declines the request", () => {
    const { sent } = renderInWidget(<Question question={form} />);
    fireEvent.click(screen.getByRole("button", { name: "Skip" }));
    expect(sent.map((s) => s.event)).toEqual([{ type: "answer", elicitationId: "e1", action: "decline" }]);
  });
});

describe("questions style", () => {
  const question = (n: number) =>
    outbound({
      type: "question",
      id: "q2",
      elicitationId: "e2",
      style: "questions",
      message: "Which size?",
      fields: [{ name: "size", kind: "choice", required: true, options: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, label: `Size ${i}` })) }],
    }) as Q;

  test("one tap answers with the chosen option, once", () => {
    const { sent } = renderInWidget(<Question question={question(3)} />);
    expect(screen.getByRole("group", { name: "Which size?" })).toBeTruthy();
    fireEvent.click(screen.getByRole("button", { name: "Size 1" }));
    fireEvent.click(screen.getByRole("button", { name: "Size 2" }));
    expect(sent.map((s) => s.event)).toEqual([{ type: "answer", elicitationId: "e2", action: "accept", content: { size: "v1" } }]);
    expect(screen.getByRole("button", { name: "Size 1" }).getAttribute("aria-pressed")).toBe("true");
  });

  test("shows at most 9 options (9 of 10)", () => {
    renderInWidget(<Question question={question(10)} />);
    expect(screen.getAllByRole("button", { name: /^Size/ })).toHaveLength(9);
  });
});
