import { describe, expect, test } from "vitest";
import { accentVariables, contrast, DARK_BG, LIGHT_BG, parseHex } from "./color.ts";

/** Every accent of a 16-step grid of the RGB cube (4,096 colours), and the mid greys where white and black both fall short. */
const ACCENTS = [
  ...Array.from({ length: 16 ** 3 }, (_, i) => `#${[i >> 8, (i >> 4) & 15, i & 15].map((v) => (v * 17).toString(16).padStart(2, "0")).join("")}`),
  "#777777",
  "#767676",
  "#7a7a7a",
  "#ffff00",
  "#00ff00",
];

describe("any data-color keeps the widget readable", () => {
  test("text on the accent (header, Send, the visitor's bubbles, the Verified badge) reads at 4.5:1 or more", () => {
    const below = ACCENTS.filter((hex) => {
      const v = accentVariables(hex)!;
      return contrast(parseHex(v["--caplo-accent"]!)!, parseHex(v["--caplo-on-accent"]!)!) < 4.5;
    });
    expect(below).toEqual([]);
  });

  test("the accent as link and focus colour reads at 4.5:1 on the light and the dark background", () => {
    const below = ACCENTS.filter((hex) => {
      const v = accentVariables(hex)!;
      return contrast(parseHex(v["--caplo-link-light"]!)!, LIGHT_BG) < 4.5 || contrast(parseHex(v["--caplo-link-dark"]!)!, DARK_BG) < 4.5;
    });
    expect(below).toEqual([]);
  });

  test("an accent text already reads on is kept as given; a mid grey is darkened just enough", () => {
    expect(accentVariables("#2457d6")!["--caplo-accent"]).toBe("#2457d6");
    expect(accentVariables("#ffff00")!).toMatchObject({ "--caplo-accent": "#ffff00", "--caplo-on-accent": "#111318" });
    const grey = accentVariables("#777777")!;
    expect(grey["--caplo-on-accent"]).toBe("#ffffff");
    expect(grey["--caplo-accent"]).not.toBe("#777777");
    expect(contrast(parseHex(grey["--caplo-accent"]!)!, [255, 255, 255])).toBeLessThan(5);
    expect(accentVariables("red")).toBeUndefined();
  });
});
