// Builds the website widget: `npx vite build -c widget/vite.config.ts` (from the repository root).
//
// What it produces in widget/dist/, and where the gateway serves it:
//   widget/dist/widget.js          → GET /widget.js           the loader, stable name (short cache, e.g. max-age=300)
//   widget/dist/app.html           → GET /widget/app.html     the app page the loader frames (no-cache); the
//                                                             loader adds ?agent=NAME&locale=…&color=…&origin=…,
//                                                             so the gateway may set `frame-ancestors` per agent.
//                                                             The app's whole stylesheet is inline in it (one
//                                                             round trip less to a painted chat), allowed by its
//                                                             hash in the page's CSP meta tag and nothing else
//   widget/dist/assets/app-*.js    → GET /widget/assets/…     hashed app script (immutable, max-age=1y)
//   widget/dist/**/*.br, *.gz                                  each file above precompressed (brotli 11, gzip 9);
//                                                             the gateway sends one by Accept-Encoding, never by its own name
// In short: `/widget.js` → dist/widget.js and `/widget/<path>` → dist/<path>. The app opens its
// WebSocket at wss://<same host>/v1/ws (WS_PATH).
//
// The loader is built on its own as one classic script (IIFE) so it shares no chunk with the app.
// JSX uses Preact's automatic runtime (no @preact/preset-vite). Only types and zod-free constants of
// @caplo/shared reach the bundle; bench/widget/size.ts checks that no zod code does.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";
import { build, defineConfig, type Plugin } from "vite";
import { styleHash, widgetAppPolicy } from "../shared/src/widgetPage.ts";

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const outDir = here("./dist");
// development: false even when NODE_ENV says otherwise (a build started from vitest inherits NODE_ENV=test,
// which would otherwise give the dev JSX runtime and 2 KB more gzip).
const jsx = { runtime: "automatic" as const, importSource: "preact", development: false };

/** Writes `file.br` and `file.gz` beside every text file of the build, at the best compression (done once, at build). */
function precompress(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.(?:js|css|html|svg|json)$/.test(entry.name)) continue;
    const path = join(entry.parentPath, entry.name);
    const body = readFileSync(path);
    writeFileSync(`${path}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
    writeFileSync(`${path}.gz`, gzipSync(body, { level: 9 }));
  }
}

/**
 * Puts the app's stylesheet inline in app.html (the CSS file is not emitted) and writes the page's CSP meta
 * tag allowing exactly that style by its hash: the first paint needs no request after the page's own.
 */
function inlineStyle(): Plugin {
  return {
    name: "caplo-widget-inline-style",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler(html, ctx) {
        const styles: string[] = [];
        const page = html.replace(/<link rel="stylesheet"[^>]*href="\/widget\/([^"]+\.css)"[^>]*>/g, (_, fileName: string) => {
          const asset = ctx.bundle?.[fileName];
          if (!asset || asset.type !== "asset") throw new Error(`inline style: ${fileName} is not in the bundle`);
          const css = String(asset.source);
          if (/<\/style/i.test(css)) throw new Error(`inline style: ${fileName} contains </style`);
          delete ctx.bundle![fileName];
          styles.push(css);
          return `<style>${css}</style>`;
        });
        if (styles.length === 0) throw new Error("inline style: app.html links no stylesheet");
        const meta = `<meta http-equiv="Content-Security-Policy" content="${widgetAppPolicy(styles.map(styleHash))}" />`;
        return page.replace("<title>", `${meta}\n    <title>`);
      },
    },
  };
}

/** After the app is built, builds the loader into the same folder as dist/widget.js, then precompresses both. */
function loader(): Plugin {
  return {
    name: "caplo-widget-loader",
    apply: "build",
    async closeBundle() {
      await build({
        configFile: false,
        mode: "production",
        logLevel: "warn",
        oxc: { jsx },
        build: {
          outDir,
          emptyOutDir: false,
          target: "es2019",
          minify: true,
          lib: { entry: here("./src/loader/index.ts"), formats: ["iife"], name: "CaploLoader", fileName: () => "widget.js" },
        },
      });
      precompress(outDir);
    },
  };
}

export default defineConfig({
  mode: "production",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  root: here("./src/app"),
  base: "/widget/",
  logLevel: "warn",
  oxc: { jsx },
  plugins: [inlineStyle(), loader()],
  build: {
    outDir,
    emptyOutDir: true,
    target: "es2020",
    minify: true,
    modulePreload: false,
    rolldownOptions: {
      input: { app: here("./src/app/app.html") },
      output: {
        entryFileNames: "assets/app-[hash].js",
        chunkFileNames: "assets/[name]-[hash].js",
        assetFileNames: "assets/app-[hash][extname]",
      },
    },
  },
});
