// The map layout: up to 20 places from latitude and longitude. With a tile source the site owner set
// (agent.yaml widget.mapTiles) the places are numbered pins on a real map: the tiles as <img> in a small
// slippy grid at the zoom that fits them all, with the source's attribution. Without one there is no map
// (a plot with no streets tells nothing and its pins overlap): each place gets a directions link.
import { useWidget } from "../context.ts";
import { Actions, actionsOf, byRole, Cell, cellPlain, columnsOf, itemsOf, More, titleColumn, type Item, type ResultMessage } from "./common.tsx";

const W = 320;
const H = 200;
const PAD = 24;
const TILE = 256;

/** Web Mercator: a place's position in pixels of the world at zoom `z`. */
function project(lat: number, lon: number, z: number): { x: number; y: number } {
  const size = TILE * 2 ** z;
  const s = Math.sin((Math.max(-85.05, Math.min(85.05, lat)) * Math.PI) / 180);
  return { x: ((lon + 180) / 360) * size, y: (0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)) * size };
}

export interface View {
  z: number;
  /** The world pixel at the map's top left corner. */
  left: number;
  top: number;
  points: { x: number; y: number }[];
  tiles: { x: number; y: number; left: number; top: number }[];
}

/** The highest zoom (at most 16) at which every place fits in the map, centred; the tiles that cover it. */
export function view(places: { lat: number; lon: number }[]): View {
  let z = 16;
  for (; z > 0; z--) {
    const ps = places.map((p) => project(p.lat, p.lon, z));
    const spanX = Math.max(...ps.map((p) => p.x)) - Math.min(...ps.map((p) => p.x));
    const spanY = Math.max(...ps.map((p) => p.y)) - Math.min(...ps.map((p) => p.y));
    if (spanX <= W - 2 * PAD && spanY <= H - 2 * PAD) break;
  }
  const ps = places.map((p) => project(p.lat, p.lon, z));
  const cx = (Math.max(...ps.map((p) => p.x)) + Math.min(...ps.map((p) => p.x))) / 2;
  const cy = (Math.max(...ps.map((p) => p.y)) + Math.min(...ps.map((p) => p.y))) / 2;
  const left = cx - W / 2;
  const top = cy - H / 2;
  const tiles: View["tiles"] = [];
  const n = 2 ** z;
  for (let ty = Math.floor(top / TILE); ty <= Math.floor((top + H) / TILE); ty++) {
    if (ty < 0 || ty >= n) continue;
    for (let tx = Math.floor(left / TILE); tx <= Math.floor((left + W) / TILE); tx++) tiles.push({ x: ((tx % n) + n) % n, y: ty, left: tx * TILE - left, top: ty * TILE - top });
  }
  return { z, left, top, points: spread(ps.map((p) => ({ x: p.x - left, y: p.y - top }))), tiles };
}

/** Pins closer than this (map pixels; a pin is about 24 px across) are moved apart so each number shows. */
export const PIN_GAP = 26;

/**
 * Pins that would cover each other (two stores in one city at a zoom that fits the country) pushed apart,
 * each by half of what is missing, a few rounds, kept inside the map: every numbered pin stays readable
 * and close to its place. The same places always give the same positions.
 */
export function spread(points: { x: number; y: number }[]): { x: number; y: number }[] {
  const out = points.map((p) => ({ ...p }));
  for (let round = 0; round < 40; round++) {
    let moved = false;
    for (let i = 0; i < out.length; i++) {
      for (let j = i + 1; j < out.length; j++) {
        const a = out[i]!;
        const b = out[j]!;
        let dx = b.x - a.x;
        let dy = b.y - a.y;
        let d = Math.hypot(dx, dy);
        if (d >= PIN_GAP - 0.01) continue;
        // One place on top of another: apart sideways, by their order.
        if (d < 0.01) [dx, dy, d] = [Math.cos(j), Math.sin(j), 1];
        const push = (PIN_GAP - d) / 2 / d;
        a.x -= dx * push;
        a.y -= dy * push;
        b.x += dx * push;
        b.y += dy * push;
        moved = true;
      }
    }
    for (const p of out) {
      p.x = Math.min(W - PIN_GAP / 2, Math.max(PIN_GAP / 2, p.x));
      p.y = Math.min(H - PIN_GAP / 2, Math.max(PIN_GAP / 2, p.y));
    }
    if (!moved) break;
  }
  return out;
}

const pct = (v: number, of: number) => `${((v / of) * 100).toFixed(3)}%`;

/** The tile URL of the owner's template ({z}, {x}, {y}). */
const tileUrl = (template: string, z: number, x: number, y: number) => template.replace("{z}", String(z)).replace("{x}", String(x)).replace("{y}", String(y));

/** A directions link any phone or browser opens (the visitor's own maps app on a phone). */
export const directionsUrl = (lat: number, lon: number) => `https://www.google.com/maps/dir/?api=1&destination=${lat.toFixed(6)},${lon.toFixed(6)}`;

const degrees = (v: unknown, limit: number): number | null =>
  typeof v === "number" && Number.isFinite(v) && Math.abs(v) <= limit ? v : null;

export function MapPlot({ result }: { result: ResultMessage }) {
  const { t, mapTiles } = useWidget();
  const columns = columnsOf(result);
  const items = itemsOf(result);
  const actions = actionsOf(result);
  const latCol = byRole(columns, "latitude");
  const lonCol = byRole(columns, "longitude");
  const address = byRole(columns, "address");
  const title = titleColumn(columns.filter((c) => c !== latCol && c !== lonCol));
  const rest = columns.filter((c) => c !== latCol && c !== lonCol && c !== address && c !== title);
  const located: { item: Item; n: number; lat: number; lon: number }[] = [];
  items.forEach((item, i) => {
    const lat = latCol ? degrees(item[latCol.key], 90) : null;
    const lon = lonCol ? degrees(item[lonCol.key], 180) : null;
    if (lat !== null && lon !== null) located.push({ item, n: i + 1, lat, lon });
  });
  const tiles = mapTiles && located.length > 0 ? mapTiles : undefined;
  const v = tiles ? view(located) : undefined;
  const at = new Map(located.map((p) => [p.item, p]));
  return (
    <>
      {tiles && v && (
        <figure class="map">
          <div class="map-tiles" role="img" aria-label={t.mapLabel.replace("{count}", String(located.length))}>
            {v.tiles.map((tile) => (
              <img
                key={`${tile.x}-${tile.y}-${tile.left}`}
                src={tileUrl(tiles.url, v.z, tile.x, tile.y)}
                alt=""
                referrerpolicy="no-referrer"
                style={{ left: pct(tile.left, W), top: pct(tile.top, H), width: pct(TILE, W), height: pct(TILE, H) }}
              />
            ))}
            {located.map((p, i) => (
              <span class="map-pin" key={p.n} aria-hidden="true" style={{ left: pct(v.points[i]!.x, W), top: pct(v.points[i]!.y, H) }}>
                {p.n}
              </span>
            ))}
          </div>
          <figcaption class="map-attribution">{tiles.attribution}</figcaption>
        </figure>
      )}
      <ol class="places">
        {items.map((item, i) => (
          <li key={i}>
            <span class="place-num" aria-label={t.placeNumber.replace("{n}", String(i + 1))}>
              {i + 1}
            </span>
            <div>
              {title && (
                <strong>
                  <Cell column={title} item={item} />
                </strong>
              )}
              {address && (
                <address>
                  <Cell column={address} item={item} />
                </address>
              )}
              {rest.map((c) => (
                <span class="item-field" key={c.key}>
                  {c.role !== "link" && <span class="label">{c.label}: </span>}
                  <Cell column={c} item={item} />
                </span>
              ))}
              {!tiles && at.has(item) && (
                <a class="directions" href={directionsUrl(at.get(item)!.lat, at.get(item)!.lon)} target="_blank" rel="noopener noreferrer">
                  {t.directions.replace("{name}", cellPlain(title, item) || String(i + 1))}
                </a>
              )}
              <Actions actions={actions} item={item} name={cellPlain(title, item)} />
            </div>
          </li>
        ))}
      </ol>
      <More result={result} shown={items.length} />
    </>
  );
}
