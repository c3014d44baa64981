// @vitest-environment happy-dom
import { fireEvent, screen, within } from "@testing-library/preact";
import { describe, expect, test } from "vitest";
import type { OutboundOf } from "@caplo/shared";
import { LAYOUT_ITEMS_MAX } from "@caplo/shared/limits";
import { outbound, renderInWidget } from "../testing.tsx";
import { Result } from "./Result.tsx";
import { choiceLabels } from "./Choices.tsx";
import { PIN_GAP, spread, view } from "./MapPlot.tsx";

type R = OutboundOf<"result">;
const result = (over: Partial<R>): R =>
  outbound({ type: "result", id: "r1", callId: "c1", layout: "list", title: "Your orders", columns: [], items: [], ...over }) as R;
const many = (n: number, make: (i: number) => Record<string, string | number | null>) => Array.from({ length: n }, (_, i) => make(i));

const orderColumns: R["columns"] = [
  { key: "orderId", label: "Order", display: "plain", role: "title" },
  { key: "status", label: "Status", display: "plain", role: "badge" },
  { key: "total", label: "Total", display: "plain", role: "money", currency: { key: "currency" } },
];

describe("any layout", () => {
  test("a result with no items says there is nothing to show instead of an empty box", () => {
    for (const layout of ["list", "table", "cards", "map", "detail"] as const) {
      const { container, unmount } = renderInWidget(<Result result={result({ layout, columns: orderColumns, items: [] })} />);
      expect(container.textContent, layout).toBe("Your ordersNothing to show");
      unmount();
    }
  });
});

describe("list", () => {
  test("shows up to 20 items and says how many more were left out (20 shown of 21)", () => {
    const items = many(21, (i) => ({ orderId: `SO-${1000 + i}`, status: "shipped", total: 10, currency: "EUR" }));
    renderInWidget(<Result result={result({ layout: "list", columns: orderColumns, items })} />);
    const list = screen.getByRole("list");
    expect(within(list).getAllByRole("listitem")).toHaveLength(20);
    expect(screen.getByText("SO-1019")).toBeTruthy();
    expect(screen.queryByText("SO-1020")).toBeNull();
    expect(screen.getByText("1 more not shown")).toBeTruthy();
  });

  test("a link column is its label as link text, not also a \"label:\" before it", () => {
    const columns: R["columns"] = [
      { key: "id", label: "Return", display: "plain", role: "title" },
      { key: "labelUrl", label: "Return label", display: "plain", role: "link" },
    ];
    const { container } = renderInWidget(<Result result={result({ layout: "list", columns, items: [{ id: "RT-1", labelUrl: "https://shop.example/l/1" }] })} />);
    expect(screen.getByRole("link").textContent).toBe("Return label (opens in a new tab)");
    expect(container.querySelector("li")!.textContent).toBe("RT-1Return label (opens in a new tab)");
  });

  test("exactly 20 items are all shown with no 'more' line", () => {
    const items = many(20, (i) => ({ orderId: `SO-${1000 + i}`, status: "shipped", total: 10, currency: "EUR" }));
    renderInWidget(<Result result={result({ layout: "list", columns: orderColumns, items })} />);
    expect(within(screen.getByRole("list")).getAllByRole("listitem")).toHaveLength(20);
    expect(screen.queryByText(/more not shown/)).toBeNull();
  });
});

describe("table", () => {
  test("has a header per column (at most 6) and one row per item", () => {
    const columns: R["columns"] = Array.from({ length: 7 }, (_, i) => ({ key: `c${i}`, label: `Col ${i}`, display: "plain" as const }));
    const items = many(3, (i) => Object.fromEntries(columns.map((c) => [c.key, `${c.key}-${i}`])));
    renderInWidget(<Result result={result({ layout: "table", columns, items })} />);
    expect(screen.getAllByRole("columnheader").map((h) => h.textContent)).toEqual(["Col 0", "Col 1", "Col 2", "Col 3", "Col 4", "Col 5"]);
    expect(screen.getAllByRole("row")).toHaveLength(4);
    expect(screen.queryByText("c6-0")).toBeNull();
  });

  test("money is formatted for the locale in the item's ISO 4217 currency", () => {
    renderInWidget(
      <Result result={result({ layout: "table", columns: orderColumns, items: [{ orderId: "SO-1", status: "x", total: 1234.5, currency: "EUR" }] })} />,
      { locale: "de-DE" },
    );
    expect(screen.getByText("1.234,50 €")).toBeTruthy();
  });
});

describe("cards", () => {
  const columns: R["columns"] = [
    { key: "img", label: "Photo", display: "plain", role: "image" },
    { key: "name", label: "Name", display: "plain", role: "title" },
    { key: "brand", label: "Brand", display: "plain", role: "subtitle" },
    { key: "about", label: "About", display: "plain", role: "description" },
    { key: "price", label: "Price", display: "plain", role: "money", currency: { code: "USD" } },
    { key: "tag", label: "Tag", display: "plain", role: "badge" },
    { key: "url", label: "Details", display: "plain", role: "link" },
    { key: "when", label: "Added", display: "plain", role: "time" },
  ].slice(0, 6) as R["columns"];
  const all = [
    ...columns,
    { key: "url", label: "Details", display: "plain", role: "link" },
    { key: "when", label: "Added", display: "plain", role: "time" },
  ] as R["columns"];

  test("place image, title, subtitle, description, money and badge by role; only the first 6 columns count", () => {
    const items = [{ img: "https://cdn.example/boot.jpg", name: "Hiking boot", brand: "Alpina", about: "Waterproof", price: 129, tag: "New", url: "https://shop.example/b", when: "2026-01-05" }];
    const { container } = renderInWidget(<Result result={result({ layout: "cards", columns: all, items })} />, { locale: "en-US" });
    expect(container.querySelector("img")!.getAttribute("src")).toBe("https://cdn.example/boot.jpg");
    expect(screen.getByRole("heading", { name: "Hiking boot" })).toBeTruthy();
    expect(screen.getByText("Alpina")).toBeTruthy();
    expect(screen.getByText("Waterproof")).toBeTruthy();
    expect(screen.getByText("$129.00")).toBeTruthy();
    expect(screen.getByText("New")).toBeTruthy();
    // link and time are columns 7 and 8: past the limit of 6, so not shown.
    expect(container.querySelector("a")).toBeNull();
  });

  test("link and time columns: an https link opens in a new tab, a time is formatted", () => {
    const cols = [all[1]!, all[6]!, all[7]!];
    const items = [{ name: "Boot", url: "https://shop.example/b", when: "2026-01-05" }];
    const { container } = renderInWidget(<Result result={result({ layout: "cards", columns: cols, items })} />, { locale: "en-US" });
    const a = container.querySelector("a")!;
    expect(a.getAttribute("href")).toBe("https://shop.example/b");
    expect(a.getAttribute("target")).toBe("_blank");
    expect(a.getAttribute("rel")).toContain("noopener");
    expect(container.querySelector("time")!.textContent).toBe("Jan 5, 2026");
  });

  test("javascript:, data: and plain http links or images are never followed", () => {
    const cols = [all[0]!, all[1]!, all[6]!];
    const items = [
      { img: "javascript:alert(1)", name: "A", url: "javascript:alert(1)" },
      { img: "data:image/png;base64,AAAA", name: "B", url: "http://evil.example/" },
      { img: " https://x.example/a.png", name: "C", url: "JaVaScRiPt:alert(1)" },
    ];
    const { container } = renderInWidget(<Result result={result({ layout: "cards", columns: cols, items })} />);
    expect(container.querySelectorAll("img")).toHaveLength(0);
    expect(container.querySelectorAll("a")).toHaveLength(0);
  });

  test("at most two actions per card; a reply sends its template with {name} filled", () => {
    const items = [{ name: "Boot", sku: "B-1" }];
    const actions: R["actions"] = [
      { kind: "reply", label: "Buy", template: "I want {name}" },
      { kind: "reply", label: "More", template: "Tell me about {name}" },
      { kind: "reply", label: "Third", template: "third" },
    ];
    const { sent } = renderInWidget(<Result result={result({ layout: "cards", columns: [all[1]!], items, actions })} />);
    expect(screen.getAllByRole("button").map((b) => b.textContent)).toEqual(["Buy", "More"]);
    fireEvent.click(screen.getByRole("button", { name: "Buy: Boot" }));
    expect(sent.map((s) => s.event)).toEqual([{ type: "message", text: "I want Boot" }]);
  });
});

describe("choices", () => {
  const columns: R["columns"] = [
    { key: "slot", label: "Time", display: "plain", role: "title" },
    { key: "where", label: "Where", display: "plain", role: "subtitle" },
  ];
  const actions: R["actions"] = [{ kind: "reply", label: "Pick", template: "Book {slot} please" }];

  test("shows up to 10 choices (10 of 11)", () => {
    const items = many(11, (i) => ({ slot: `${9 + i}:00`, where: "Ljubljana" }));
    renderInWidget(<Result result={result({ layout: "choices", columns, items, actions })} />);
    expect(screen.getAllByRole("button")).toHaveLength(10);
    expect(screen.getByText("1 more not shown")).toBeTruthy();
  });

  test("tapping a choice sends the reply template with {name} filled, once", () => {
    const items = many(3, (i) => ({ slot: `${9 + i}:00`, where: "Ljubljana" }));
    const { sent } = renderInWidget(<Result result={result({ layout: "choices", columns, items, actions })} />);
    fireEvent.click(screen.getByRole("button", { name: /10:00/ }));
    fireEvent.click(screen.getByRole("button", { name: /11:00/ }));
    expect(sent.map((s) => s.event)).toEqual([{ type: "message", text: "Book 10:00 please" }]);
    expect(screen.getByRole("button", { name: /10:00/ }).getAttribute("aria-pressed")).toBe("true");
    expect(screen.getAllByRole("button").every((b) => (b as HTMLButtonElement).disabled)).toBe(true);
  });

  test("a choice's message is known by its label from the result alone (a history from the server shows the label, not the ids the message carries)", () => {
    const items = [
      { slot: "Sat 5 Dec, 15:00", where: "Ljubljana", id: "SL-LJ1-20261205T15" },
      { slot: "Sat 5 Dec, 16:00", where: "Maribor", id: "SL-MB1-20261205T16" },
    ];
    const withIds: R["columns"] = [...columns, { key: "id", label: "Slot", display: "plain" }];
    const labels = choiceLabels([result({ layout: "choices", columns: withIds, items, actions: [{ kind: "reply", label: "Pick", template: "Book slot {id}" }] }), result({ layout: "table", columns, items })]);
    expect(labels).toEqual({ "Book slot SL-LJ1-20261205T15": "Sat 5 Dec, 15:00", "Book slot SL-MB1-20261205T16": "Sat 5 Dec, 16:00" });
  });
});

describe("detail", () => {
  test("shows one object's columns (up to 12) as label and value, with up to two actions", () => {
    const columns: R["columns"] = Array.from({ length: 13 }, (_, i) => ({ key: `f${i}`, label: `Field ${i}`, display: "plain" as const }));
    const item = Object.fromEntries(columns.map((c) => [c.key, `v-${c.key}`]));
    renderInWidget(
      <Result
        result={result({ layout: "detail", columns, items: [item, { f0: "second" }], actions: [{ kind: "link", label: "Open", key: "f0" }] })}
      />,
    );
    expect(screen.getByText("Field 11")).toBeTruthy();
    expect(screen.queryByText("Field 12")).toBeNull();
    expect(screen.queryByText("second")).toBeNull();
    // f0 is not an https URL, so the link action is not offered.
    expect(screen.queryByRole("link")).toBeNull();
  });
});

describe("comparison", () => {
  test("puts up to 4 items side by side (4 of 5), one row per column", () => {
    const columns: R["columns"] = [
      { key: "plan", label: "Plan", display: "plain", role: "title" },
      { key: "price", label: "Price", display: "plain", role: "money", currency: { code: "EUR" } },
    ];
    const items = many(5, (i) => ({ plan: `Plan ${i}`, price: 10 * (i + 1) }));
    renderInWidget(<Result result={result({ layout: "comparison", columns, items })} />, { locale: "en-IE" });
    expect(screen.getAllByRole("columnheader").map((h) => h.textContent)).toEqual(["Plan 0", "Plan 1", "Plan 2", "Plan 3"]);
    expect(screen.getByRole("rowheader").textContent).toBe("Price");
    expect(screen.getByText("€40.00")).toBeTruthy();
    expect(screen.queryByText("Plan 4")).toBeNull();
  });
});

describe("timeline", () => {
  const columns: R["columns"] = [
    { key: "step", label: "Step", display: "plain", role: "title" },
    { key: "state", label: "State", display: "plain", role: "status", statuses: { ok: "done", now: "current", later: "upcoming", bad: "failed" } },
  ];

  test("maps each status through statuses and marks the current step", () => {
    const items = [
      { step: "Ordered", state: "ok" },
      { step: "Packed", state: "bad" },
      { step: "Shipped", state: "now" },
      { step: "Delivered", state: "later" },
    ];
    const { container } = renderInWidget(<Result result={result({ layout: "timeline", columns, items })} />);
    const steps = [...container.querySelectorAll("li.step")];
    expect(steps.map((s) => s.className)).toEqual(["step step-done", "step step-failed", "step step-current", "step step-upcoming"]);
    expect(steps[2]!.getAttribute("aria-current")).toBe("step");
    expect(steps[1]!.textContent).toContain("Failed");
  });

  test("a step says its state in words, not the status column's raw value", () => {
    const items = [{ step: "Out for delivery", state: "now" }];
    const { container } = renderInWidget(<Result result={result({ layout: "timeline", columns, items })} />);
    expect(container.querySelector("li.step")!.textContent).toBe("●Out for delivery In progress");
  });

  test("shows up to 12 steps (12 of 13)", () => {
    const items = many(13, (i) => ({ step: `S${i}`, state: "ok" }));
    const { container } = renderInWidget(<Result result={result({ layout: "timeline", columns, items })} />);
    expect(container.querySelectorAll("li.step")).toHaveLength(LAYOUT_ITEMS_MAX.timeline);
  });
});

describe("map", () => {
  const columns: R["columns"] = [
    { key: "name", label: "Store", display: "plain", role: "title" },
    { key: "lat", label: "Lat", display: "plain", role: "latitude" },
    { key: "lon", label: "Lon", display: "plain", role: "longitude" },
    { key: "addr", label: "Address", display: "plain", role: "address" },
  ];

  const tiles = { url: "https://tiles.example/{z}/{x}/{y}.png", attribution: "© Example map contributors" };

  test("with the owner's tile source: up to 20 places (20 of 21) as numbered pins on tiles of that source, with its attribution and an address list", () => {
    const items = many(21, (i) => ({ name: `Store ${i}`, lat: 46 + i / 100, lon: 14.5 + i / 100, addr: `Street ${i}` }));
    const { container } = renderInWidget(<Result result={result({ layout: "map", columns, items })} />, { mapTiles: tiles });
    const map = screen.getByRole("img", { name: "Map of 20 places" });
    expect(map.querySelectorAll(".map-pin")).toHaveLength(20);
    const srcs = [...map.querySelectorAll("img")].map((img) => img.getAttribute("src")!);
    expect(srcs.length).toBeGreaterThan(0);
    for (const src of srcs) expect(src).toMatch(/^https:\/\/tiles\.example\/\d+\/\d+\/\d+\.png$/);
    expect(screen.getByText("© Example map contributors")).toBeTruthy();
    expect(container.querySelectorAll("ol.places > li")).toHaveLength(20);
    expect(screen.getByText("Street 19")).toBeTruthy();
    // A map: no directions link per place.
    expect(container.querySelector("a.directions")).toBeNull();
  });

  test("the view fits every place at the highest zoom, and its tiles cover the whole map", () => {
    const v = view([
      { lat: 46.0569, lon: 14.5058 },
      { lat: 46.5547, lon: 15.6459 },
    ]);
    for (const p of v.points) {
      expect(p.x).toBeGreaterThanOrEqual(0);
      expect(p.x).toBeLessThanOrEqual(320);
      expect(p.y).toBeGreaterThanOrEqual(0);
      expect(p.y).toBeLessThanOrEqual(200);
    }
    // Ljubljana and Maribor, about 100 km apart: zoom 8 fits both in 320 by 200 pixels.
    expect(v.z).toBe(8);
    expect(Math.min(...v.tiles.map((t) => t.left))).toBeLessThanOrEqual(0);
    expect(Math.min(...v.tiles.map((t) => t.top))).toBeLessThanOrEqual(0);
    expect(Math.max(...v.tiles.map((t) => t.left + 256))).toBeGreaterThanOrEqual(320);
    expect(Math.max(...v.tiles.map((t) => t.top + 256))).toBeGreaterThanOrEqual(200);
  });

  test("pins of places close together (two stores in one city) are moved apart so none covers another's number", () => {
    // The test shop's five stores: two in Ljubljana 3 km apart, at the zoom that fits Koper and Maribor.
    const v = view([
      { lat: 46.0514, lon: 14.5034 },
      { lat: 46.0664, lon: 14.5454 },
      { lat: 46.558, lon: 15.6467 },
      { lat: 46.2389, lon: 14.3556 },
      { lat: 45.5469, lon: 13.7294 },
    ]);
    for (let i = 0; i < v.points.length; i++) {
      for (let j = i + 1; j < v.points.length; j++) expect(Math.hypot(v.points[i]!.x - v.points[j]!.x, v.points[i]!.y - v.points[j]!.y)).toBeGreaterThanOrEqual(PIN_GAP - 0.1);
      expect(v.points[i]!.x).toBeGreaterThanOrEqual(PIN_GAP / 2);
      expect(v.points[i]!.y).toBeLessThanOrEqual(200 - PIN_GAP / 2);
    }
    // Places apart already stay where they are; one on top of another is set beside it.
    expect(spread([{ x: 10, y: 10 }, { x: 200, y: 100 }])).toEqual([{ x: PIN_GAP / 2, y: PIN_GAP / 2 }, { x: 200, y: 100 }]);
    const [a, b] = spread([{ x: 100, y: 100 }, { x: 100, y: 100 }]);
    expect(Math.hypot(a!.x - b!.x, a!.y - b!.y)).toBeCloseTo(PIN_GAP, 1);
  });

  test("without a tile source: no map box at all, and each place with coordinates has a directions link by name", () => {
    const items = [
      { name: "A", lat: 46.05, lon: 14.5, addr: "a" },
      { name: "B", lat: 123, lon: 14.5, addr: "b" },
      { name: "C", lat: null, lon: 14.5, addr: "c" },
    ];
    const { container } = renderInWidget(<Result result={result({ layout: "map", columns, items })} />);
    expect(container.querySelector(".map, svg, img")).toBeNull();
    expect(container.querySelectorAll("ol.places > li")).toHaveLength(3);
    const links = screen.getAllByRole("link", { name: /^Directions to/ });
    expect(links.map((a) => [a.textContent, a.getAttribute("href")])).toEqual([["Directions to A", "https://www.google.com/maps/dir/?api=1&destination=46.050000,14.500000"]]);
  });
});

describe("page", () => {
  const columns: R["columns"] = [{ key: "url", label: "Pay", display: "plain", role: "link" }];

  test("a panel page opens over the chat with its listed origins", () => {
    const r = result({
      layout: "page",
      columns,
      items: [{ url: "https://pay.example/checkout/1" }],
      page: { label: "Pay now", display: "panel", origins: ["https://pay.example"], urlKey: "url" },
    });
    const { opened } = renderInWidget(<Result result={r} />);
    fireEvent.click(screen.getByRole("button", { name: /Pay now/ }));
    expect(opened).toEqual([{ url: "https://pay.example/checkout/1", origins: ["https://pay.example"] }]);
  });

  test("a tab page is a link to a new tab", () => {
    const r = result({
      layout: "page",
      columns,
      items: [{ url: "https://pay.example/checkout/1" }],
      page: { label: "Pay now", display: "tab", origins: ["https://pay.example"], urlKey: "url" },
    });
    renderInWidget(<Result result={r} />);
    const link = screen.getByRole("link", { name: /Pay now/ });
    expect(link.getAttribute("href")).toBe("https://pay.example/checkout/1");
    expect(link.getAttribute("target")).toBe("_blank");
  });

  test("a link outside the listed origins, or not https, gets no button", () => {
    for (const url of ["https://evil.example/checkout", "http://pay.example/checkout", "javascript:alert(1)"]) {
      const r = result({
        layout: "page",
        columns,
        items: [{ url }],
        page: { label: "Pay now", display: "panel", origins: ["https://pay.example"], urlKey: "url" },
      });
      const { unmount } = renderInWidget(<Result result={r} />);
      expect(screen.queryByRole("button", { name: /Pay now/ })).toBeNull();
      expect(screen.getByText("This link cannot be opened here.")).toBeTruthy();
      unmount();
    }
  });
});

describe("every layout", () => {
  test("renders server text as text: markup in titles, labels and values never becomes elements", () => {
    const columns: R["columns"] = [
      { key: "a", label: "<i>label</i>", display: "plain", role: "title" },
      { key: "b", label: "B", display: "plain" },
    ];
    const items = [{ a: "<script>alert(1)</script>", b: '<img src=x onerror="alert(1)">' }];
    for (const layout of ["list", "table", "cards", "choices", "detail", "comparison", "timeline", "map"] as const) {
      const { container, unmount } = renderInWidget(
        <Result result={result({ layout, title: "<b>t</b>", columns, items, actions: [{ kind: "reply", label: "Go", template: "{a}" }] })} />,
      );
      expect(container.querySelector("script, i, b, img[src='x']")).toBeNull();
      expect(container.textContent).toContain("<b>t</b>");
      unmount();
    }
  });

  test("an overlong value is cut so it cannot flood the conversation", () => {
    const columns: R["columns"] = [{ key: "a", label: "A", display: "plain" }];
    const { container } = renderInWidget(<Result result={result({ layout: "list", columns, items: [{ a: "x".repeat(50_000) }] })} />);
    expect(container.textContent!.length).toBeLessThan(2_100);
    expect(container.textContent).toContain("…");
  });

  test("a last4 column shows only the final four characters", () => {
    const columns: R["columns"] = [{ key: "card", label: "Card", display: "last4" }];
    const { container } = renderInWidget(<Result result={result({ layout: "table", columns, items: [{ card: "4111111111111111" }] })} />);
    expect(container.textContent).toContain("1111");
    expect(container.textContent).not.toContain("41111111");
  });
});
