// Builds the team console: `npx vite build -c console/vite.config.ts` (from the repository root). The same
// toolchain as the widget (Vite, Preact's automatic JSX runtime, no preset). What it produces in console/dist,
// served by the gateway (gateway.ts serveConsole):
//   console/dist/index.html          → GET /console and every path under it (no-cache; the app routes by #hash)
//   console/dist/assets/console-*.js → GET /console/assets/…  hashed script and CSS (immutable, max-age=1y)
// The console reuses the widget's conversation components (widget/src/app): the same review cards, receipts,
// tables and files the customer saw. bench/console/size.ts measures the bundle (aim: at most 100 KB gzip).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const jsx = { runtime: "automatic" as const, importSource: "preact", development: false };

export default defineConfig({
  mode: "production",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  root: here("./src"),
  base: "/console/",
  logLevel: "warn",
  oxc: { jsx },
  build: {
    outDir: here("./dist"),
    emptyOutDir: true,
    target: "es2020",
    minify: true,
    modulePreload: false,
    rolldownOptions: {
      input: { console: here("./src/index.html") },
      output: {
        entryFileNames: "assets/console-[hash].js",
        chunkFileNames: "assets/[name]-[hash].js",
        assetFileNames: "assets/console-[hash][extname]",
      },
    },
  },
});
