// Readable colours from any accent: the text on the accent is dark or light, whichever reaches 4.5:1, and
// the accent used as text or focus ring on the page background is darkened (light theme) or lightened
// (dark theme) until it reaches 4.5:1 there (WCAG 2.1 relative luminance and contrast ratio).

type Rgb = [number, number, number];

export function parseHex(hex: string): Rgb | null {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(hex);
  if (!m) return null;
  const h = m[1]!.length === 3 ? [...m[1]!].map((c) => c + c).join("") : m[1]!;
  return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)) as Rgb;
}

const toHex = (rgb: Rgb) => `#${rgb.map((v) => Math.round(Math.max(0, Math.min(255, v))).toString(16).padStart(2, "0")).join("")}`;

export function luminance([r, g, b]: Rgb): number {
  const lin = (v: number) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

export function contrast(a: Rgb, b: Rgb): number {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p) as [number, number];
  return (x + 0.05) / (y + 0.05);
}

const DARK_TEXT: Rgb = [17, 19, 24];
const LIGHT_TEXT: Rgb = [255, 255, 255];

/** Text on the accent: white when it reads at 4.5:1 or better, else near-black (whichever reads better). */
export function onAccent(accent: Rgb): string {
  return contrast(accent, LIGHT_TEXT) >= 4.5 || contrast(accent, LIGHT_TEXT) >= contrast(accent, DARK_TEXT) ? toHex(LIGHT_TEXT) : toHex(DARK_TEXT);
}

/** The accent mixed toward black or white until it reads at `ratio` on `background`. */
export function readableOn(accent: Rgb, background: Rgb, ratio = 4.5): string {
  const toward: Rgb = luminance(background) > 0.5 ? [0, 0, 0] : [255, 255, 255];
  for (let step = 0; step <= 40; step++) {
    const k = step / 40;
    // Judged as it will be drawn: rounded to whole channel values.
    const mixed = toHex(accent.map((v, i) => v + (toward[i]! - v) * k) as Rgb);
    if (contrast(parseHex(mixed)!, background) >= ratio) return mixed;
  }
  return toHex(toward);
}

export const LIGHT_BG: Rgb = [255, 255, 255];
export const DARK_BG: Rgb = [22, 24, 29];

/**
 * The accent as a background for text: itself when white or near-black text reads at 4.5:1 on it, else (a
 * mid grey such as #777, where neither quite does) darkened just enough for white text to.
 */
export function accentBackground(accent: Rgb): Rgb {
  if (Math.max(contrast(accent, LIGHT_TEXT), contrast(accent, DARK_TEXT)) >= 4.5) return accent;
  return parseHex(readableOn(accent, LIGHT_TEXT))!;
}

/** The CSS variables an accent sets: itself (as a background text reads on), the text on it, and its readable form on each theme's background. */
export function accentVariables(hex: string): Record<string, string> | undefined {
  const given = parseHex(hex);
  if (!given) return undefined;
  const rgb = accentBackground(given);
  return {
    "--caplo-accent": toHex(rgb),
    "--caplo-on-accent": onAccent(rgb),
    "--caplo-link-light": readableOn(rgb, LIGHT_BG),
    "--caplo-link-dark": readableOn(rgb, DARK_BG),
  };
}
