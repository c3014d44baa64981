// Builds the team console: `npx vite build -c console/vite.config.ts` (from the repository root). The same
// toolchain as the widget (Vite, Preact's automatic JSX runtime, no preset). What it produces in console/dist,
// served by the gateway (gateway.ts serveConsole):
//   console/dist/index.html          → GET /console and every path under it (no-cache; the app routes by #hash)
//   console/dist/assets/console-*.js → GET /console/assets/…  hashed script and CSS (immutable, max-age=1y)
// The console reuses the widget's conversation components (widget/src/app): the same review cards, receipts,
// tables and files the customer saw. bench/console/size.ts measures the bundle (aim: at most 100 KB gzip).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const jsx = { runtime: "automatic" as const, importSource: "preact", development: false };
const PAGE = here("./src/index.html");

/**
 * The console's page is the widget's app page (widget/src/app/app.html: one document head, one mount point
 * `#caplo`, one module script `./main.tsx`) with its own title and without the widget's CSP and referrer
 * metas: the gateway sends the console's Content-Security-Policy and `Referrer-Policy: same-origin` as headers
 * (a page with no-referrer would send `Origin: null` on the console's POSTs, which the CSRF check refuses).
 */
export function consolePage(widgetPage: string): string {
  const titled = widgetPage.replace(/<title>[^<]*<\/title>/, "<title>Caplo console</title>");
  if (titled === widgetPage || !titled.includes('<div id="caplo"></div>') || !titled.includes('src="./main.tsx"')) {
    throw new Error("widget/src/app/app.html no longer has the <title>, <div id=\"caplo\"> and ./main.tsx script the console's page is made from (console/vite.config.ts)");
  }
  return titled.replace(/\s*<meta\s+http-equiv="Content-Security-Policy"[^>]*>/i, "").replace(/\s*<meta\s+name="referrer"[^>]*>/i, "");
}

const pageFromWidget = (): Plugin => ({
  name: "caplo-console-page",
  enforce: "pre",
  resolveId: (id) => (id === PAGE ? PAGE : undefined),
  load: (id) => (id === PAGE ? consolePage(readFileSync(here("../widget/src/app/app.html"), "utf8")) : undefined),
});

export default defineConfig({
  mode: "production",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  root: here("./src"),
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx },
  plugins: [pageFromWidget()],
  build: {
    outDir: here("./dist"),
    emptyOutDir: true,
    target: "es2020",
    minify: true,
    modulePreload: false,
    rolldownOptions: {
      input: { console: PAGE },
      output: {
        entryFileNames: "assets/console-[hash].js",
        chunkFileNames: "assets/[name]-[hash].js",
        assetFileNames: "assets/console-[hash][extname]",
      },
    },
  },
});
