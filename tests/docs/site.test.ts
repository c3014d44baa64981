// The docs site (server/src/docs/site.ts): built from docs/ with Eleventy and Pagefind, served by the real
// gateway at /docs/. Every page is reached from the index, every link and #anchor on every page answers,
// the references list what the schemas say, the JSON Schemas sit where caplo.yaml's first line points, a
// link to nothing fails the build, and the search finds a page in Chromium. (Every `sh runnable` command
// of the same pages is run by tests/examples/docs.test.ts.)
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MANIFEST_SCHEMA_URL } from "@caplo/shared";
import { AGENT_SCHEMA_ID } from "../../server/src/agents/agentSchema.ts";
import { buildDocsSite } from "../../server/src/docs/site.ts";
import { startStack, type Stack } from "../gateway/support/stack.ts";
import { launchChromium } from "../widget/browser.ts";

const dir = mkdtempSync(join(tmpdir(), "caplo-docs-site-"));
const site = join(dir, "site");
let stack: Stack;
let pages = 0;

beforeAll(async () => {
  ({ pages } = await buildDocsSite(site));
  stack = await startStack({ gateway: { docsDir: site } });
}, 120_000);

afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The hrefs and srcs of a page, and the ids it has. */
function linksOf(html: string): { links: string[]; ids: Set<string> } {
  const links = [...html.matchAll(/\s(?:href|src)="([^"]+)"/g)].map((match) => match[1]!.replaceAll("&amp;", "&"));
  const ids = new Set([...html.matchAll(/\sid="([^"]+)"/g)].map((match) => match[1]!));
  return { links, ids };
}

describe("the docs site", () => {
  it("reaches every page from /docs/, and every link and anchor on every page answers through the gateway", async () => {
    const redirect = await fetch(`${stack.base}/docs`, { redirect: "manual" });
    expect(redirect.status).toBe(308);
    expect(redirect.headers.get("location")).toBe("/docs/");

    const seen = new Map<string, Set<string>>(); // page URL → its ids
    const anchors: Array<{ from: string; page: string; id: string }> = [];
    const queue = [`${stack.base}/docs/`];
    const broken: string[] = [];
    while (queue.length) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      const response = await fetch(url);
      if (response.status !== 200) {
        broken.push(`${url}: ${response.status}`);
        seen.set(url, new Set());
        continue;
      }
      const type = response.headers.get("content-type") ?? "";
      const body = await response.text();
      if (!type.startsWith("text/html")) {
        seen.set(url, new Set());
        continue;
      }
      const { links, ids } = linksOf(body);
      seen.set(url, ids);
      for (const link of links) {
        if (/^(https?:)?\/\//.test(link) && !link.startsWith(stack.base)) continue; // outside links are not fetched here
        const target = new URL(link, url);
        target.hash && anchors.push({ from: url, page: `${target.origin}${target.pathname}`, id: decodeURIComponent(target.hash.slice(1)) });
        target.hash = "";
        queue.push(target.toString());
      }
    }
    expect(broken).toEqual([]);
    const missing = anchors.filter(({ page, id }) => !seen.get(page === `${stack.base}/docs/` ? page : page)?.has(id)).map(({ from, page, id }) => `${from} → ${page}#${id}`);
    expect(missing).toEqual([]);
    const htmlPages = [...seen.keys()].filter((url) => url.endsWith(".html") || url.endsWith("/"));
    // Every page Eleventy wrote is reachable (the index is reached as /docs/ and as index.html).
    expect(htmlPages.length).toBeGreaterThanOrEqual(pages);
  }, 120_000);

  it("lists every field of caplo.yaml and agent.yaml from their schemas, and serves the schemas where caplo.yaml points", async () => {
    const caplo = await (await fetch(`${stack.base}/docs/reference/caplo-yaml.html`)).text();
    for (const field of ["apiVersion", "egress", "tools[].timeoutSeconds", "tools[].progress.spoken", "progress.spoken", "confirmation"]) expect(caplo).toContain(`<code>${field}</code>`);
    expect(caplo).toContain("{1,88}\\.$"); // progress.spoken: 3 to 90 characters ending in a full stop, as the pattern says
    const agent = await (await fetch(`${stack.base}/docs/reference/agent-yaml.html`)).text();
    for (const field of ["name", "instructions", "tools", "channels"]) expect(agent).toContain(`<code>${field}</code>`);

    // Hosted at the site's root, /schemas/caplo.schema.json is what `# yaml-language-server: $schema=` names.
    expect(new URL(MANIFEST_SCHEMA_URL).pathname).toBe("/schemas/caplo.schema.json");
    // And so is agent.yaml's: the file `caplo agent init` names in its first line, as checked in.
    expect(new URL(AGENT_SCHEMA_ID).pathname).toBe("/schemas/agent.schema.json");
    for (const file of ["caplo.schema.json", "agent.schema.json"]) {
      const schema = await fetch(`${stack.base}/docs/schemas/${file}`);
      expect(schema.status, file).toBe(200);
      expect(await schema.json(), file).toEqual(JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "schemas", file), "utf8")));
    }
    const page = await fetch(`${stack.base}/docs/index.html`);
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });

  it("lists every field any object of the two schemas names, those behind a $ref included", async () => {
    for (const [page, file] of [
      ["caplo-yaml", "caplo.schema.json"],
      ["agent-yaml", "agent.schema.json"],
    ] as const) {
      const html = await (await fetch(`${stack.base}/docs/reference/${page}.html`)).text();
      const listed = [...html.matchAll(/<code>([^<]+)<\/code>/g)].map((match) => match[1]!);
      const names = new Set<string>();
      const walk = (node: unknown): void => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (!node || typeof node !== "object") return;
        for (const [key, value] of Object.entries(node)) {
          if (key === "properties" && value && typeof value === "object") for (const name of Object.keys(value)) names.add(name);
          walk(value);
        }
      };
      walk(JSON.parse(readFileSync(join(import.meta.dirname, "..", "..", "schemas", file), "utf8")));
      expect(names.size, file).toBeGreaterThan(20);
      expect([...names].filter((name) => !listed.some((path) => path === name || path.endsWith(`.${name}`))), page).toEqual([]);
    }
    // The handoff, defined once in agent.yaml's schema and used on every channel, is listed where it is used.
    const agent = await (await fetch(`${stack.base}/docs/reference/agent-yaml.html`)).text();
    for (const field of ["channels.web.handoff.queue", "channels.whatsapp.handoff.message", "channels.whatsapp.outsideWindowTemplate.contentSid"]) expect(agent).toContain(`<code>${field}</code>`);
  });

  it("answers a page that is not there with a coded 404, and refuses paths out of the site", async () => {
    const missing = await fetch(`${stack.base}/docs/no-such-page.html`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "not_found", message: "no such page in the docs" } });
    for (const path of ["/docs/../package.json", "/docs/%2e%2e/package.json", "/docs/.hidden", "/docs/..%2f..%2fpackage.json"]) {
      expect((await fetch(`${stack.base}${path}`)).status, path).toBe(404);
    }
  });

  it("finds pages with the search box in Chromium", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${stack.base}/docs/`);
      await page.fill(".pagefind-ui__search-input", "idempotency");
      const first = page.locator(".pagefind-ui__result-link").first();
      await first.waitFor({ timeout: 20_000 });
      const href = await first.getAttribute("href");
      expect(href).toMatch(/^\/docs\/.+\.html/);
      expect((await fetch(new URL(href!, stack.base))).status).toBe(200);
    } finally {
      await browser.close();
    }
  }, 60_000);
});

describe("building the docs site", () => {
  it("fails with docs_link_broken naming the page and the link when a page links to nothing", async () => {
    const { DocsSiteError } = await import("../../server/src/docs/site.ts");
    const docs = join(dir, "broken-docs");
    mkdirSync(docs, { recursive: true });
    writeFileSync(join(docs, "README.md"), "# Docs\n\nSee [the guide](guide.md).\n");
    writeFileSync(join(docs, "guide.md"), "# Guide\n\nSee [this](nowhere.md).\n");
    await expect(buildDocsSite(join(dir, "broken-site"), docs)).rejects.toSatisfy(
      (error: unknown) => error instanceof DocsSiteError && error.code === "docs_link_broken" && error.message === "guide.md: nowhere.md does not exist",
    );
  }, 60_000);
});
