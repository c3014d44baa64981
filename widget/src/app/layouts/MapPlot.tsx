// The map layout: up to 20 places drawn from latitude and longitude as numbered points on a plain SVG
// plot of their relative positions, with the numbered address list beside it. No third-party tiles or
// scripts: nothing about the visitor leaves for a map provider.
import { useWidget } from "../context.ts";
import { Actions, actionsOf, byRole, Cell, cellPlain, columnsOf, itemsOf, More, titleColumn, type Item, type ResultMessage } from "./common.tsx";

const W = 320;
const H = 200;
const PAD = 18;

interface Point {
  x: number;
  y: number;
}

/** Plots places in an equirectangular projection scaled to fit, longitude shrunk by the mean latitude. */
export function plot(places: { lat: number; lon: number }[]): Point[] {
  if (places.length === 0) return [];
  const meanLat = places.reduce((s, p) => s + p.lat, 0) / places.length;
  const k = Math.cos((meanLat * Math.PI) / 180);
  const xs = places.map((p) => p.lon * k);
  const ys = places.map((p) => p.lat);
  const [minX, maxX, minY, maxY] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const span = Math.max(maxX - minX, maxY - minY, 1e-9);
  const scale = Math.min((W - 2 * PAD) / span, (H - 2 * PAD) / span);
  const offX = (W - (maxX - minX) * scale) / 2;
  const offY = (H - (maxY - minY) * scale) / 2;
  return places.map((_, i) => ({ x: offX + (xs[i]! - minX) * scale, y: H - (offY + (ys[i]! - minY) * scale) }));
}

const degrees = (v: unknown, limit: number): number | null =>
  typeof v === "number" && Number.isFinite(v) && Math.abs(v) <= limit ? v : null;

export function MapPlot({ result }: { result: ResultMessage }) {
  const { t } = useWidget();
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
  const points = plot(located);
  return (
    <>
      {located.length > 0 && (
        <svg class="map" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={t.mapLabel.replace("{count}", String(located.length))}>
          <rect x="0" y="0" width={W} height={H} rx="8" class="map-bg" />
          {located.map((p, i) => (
            <g key={p.n} transform={`translate(${points[i]!.x.toFixed(1)} ${points[i]!.y.toFixed(1)})`}>
              <title>{cellPlain(title, p.item)}</title>
              <circle r="9" class="map-pin" />
              <text text-anchor="middle" dy="4" class="map-num">
                {p.n}
              </text>
            </g>
          ))}
        </svg>
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
              <Actions actions={actions} item={item} name={cellPlain(title, item)} />
            </div>
          </li>
        ))}
      </ol>
      <More result={result} shown={items.length} />
    </>
  );
}
