// Builds docs/ into a static site with Eleventy (a maintained generator on Node 20) and a Pagefind search
// index: every page of docs/, the caplo.yaml and agent.yaml references generated from their schemas, the
// repository files the pages link to (as source pages), and the JSON Schemas at /schemas/, where
// caplo.yaml's first line points once the site is hosted. A link to anything that does not exist fails
// the build. `npm run docs:build` (or `npx tsx server/src/docs/site.ts [OUT]`; default dist/docs-site), which
// `npm install` also runs; `caplo serve` and the demo serve the result at /docs.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { agentJsonSchema, manifestJsonSchema, referencePage } from "./reference.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const DEFAULT_SITE_DIR = join(ROOT, "dist", "docs-site");

export class DocsSiteError extends Error {
  readonly code: "docs_link_broken" | "docs_build_failed";
  constructor(code: "docs_link_broken" | "docs_build_failed", message: string) {
    super(message);
    this.code = code;
  }
}

/** docs/ path (posix, relative to docs/) → the site path of its page. README.md is its folder's index. */
function pagePath(docPath: string): string {
  return docPath.replace(/(^|\/)README\.md$/, "$1index.md").replace(/\.md$/, ".html");
}

function markdownFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path, base);
    return entry.name.endsWith(".md") ? [relative(base, path).split("\\").join("/")] : [];
  });
}

const trackedFiles = (() => {
  let cache: Set<string> | undefined;
  return () => (cache ??= new Set(execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean)));
})();

/** Rewrites one page's links for the site; records the repository files and folders it links to. */
function rewriteLinks(docsDir: string, docPath: string, text: string, sources: Set<string>): string {
  const pageDir = posix.dirname(pagePath(docPath));
  const hrefTo = (sitePath: string) => {
    const link = posix.relative(pageDir, sitePath);
    return link === "" ? posix.basename(sitePath) : link;
  };
  // Links inside fenced code blocks are code, not links.
  const parts = text.split(/(^```[\s\S]*?^```)/m);
  return parts
    .map((part, index) =>
      index % 2 === 1
        ? part
        : part.replace(/\]\(([^)\s]+)(\s+"[^"]*")?\)/g, (whole, target: string, title = "") => {
            if (/^(https?:|mailto:|#)/.test(target)) return whole;
            const [path = "", anchor] = target.split("#", 2);
            const suffix = anchor === undefined ? "" : `#${anchor}`;
            const repoPath = posix.normalize(posix.join("docs", posix.dirname(docPath), path)).replace(/\/$/, "");
            if (repoPath.startsWith("docs/") && repoPath.endsWith(".md")) {
              const inDocs = repoPath.slice("docs/".length);
              if (!existsSync(join(docsDir, inDocs))) throw new DocsSiteError("docs_link_broken", `${docPath}: ${target} does not exist`);
              return `](${hrefTo(pagePath(inDocs))}${suffix}${title})`;
            }
            if (repoPath === "schemas/caplo.schema.json") return `](${hrefTo("schemas/caplo.schema.json")}${suffix}${title})`;
            const isFile = trackedFiles().has(repoPath);
            const isFolder = !isFile && [...trackedFiles()].some((file) => file.startsWith(`${repoPath}/`));
            if (!isFile && !isFolder) throw new DocsSiteError("docs_link_broken", `${docPath}: ${target} is not a file of the repository`);
            sources.add(repoPath);
            return `](${hrefTo(sourcePath(repoPath, isFolder))}${suffix}${title})`;
          }),
    )
    .join("");
}

function sourcePath(repoPath: string, folder: boolean): string {
  return folder ? `source/${repoPath}/index.html` : `source/${repoPath}.html`;
}

/** A fence longer than any run of backticks in the text, so the file shows as it is. */
function fenced(text: string, language: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text.replace(/\n$/, "")}\n${fence}`;
}

/** The source pages: each linked file, and each linked folder as a list of its files (which get pages too). */
function writeSourcePages(staging: string, sources: Set<string>): void {
  const files = new Set<string>();
  for (const path of sources) {
    if (trackedFiles().has(path)) files.add(path);
    else {
      const inside = [...trackedFiles()].filter((file) => file.startsWith(`${path}/`)).sort();
      for (const file of inside) files.add(file);
      const list = inside.map((file) => `- [${file.slice(path.length + 1)}](${posix.relative(`source/${path}`, sourcePath(file, false))})`);
      write(staging, `source/${path}/index.md`, `# ${path}/\n\nThe files of \`${path}/\` in the Caplo repository.\n\n${list.join("\n")}\n`);
    }
  }
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const language = posix.extname(file).slice(1).replace(/^(mts|mjs)$/, "js");
    write(staging, `source/${file}.md`, `# ${file}\n\nA file of the Caplo repository, as it is.\n\n${fenced(text, language)}\n`);
  }
}

function write(staging: string, path: string, text: string): void {
  mkdirSync(dirname(join(staging, path)), { recursive: true });
  writeFileSync(join(staging, path), text);
}

/**
 * Builds the site into `target` (replaced whole, at once: it is built beside it and renamed, so a server
 * reading it never sees half a site). Throws DocsSiteError with a code when it cannot.
 */
export async function buildDocsSite(target = DEFAULT_SITE_DIR, docsDir = join(ROOT, "docs")): Promise<{ pages: number; out: string }> {
  const out = `${target}.building-${process.pid}-${Date.now()}`;
  // Eleventy reads its input relative to the working folder: stage under dist/ (git-ignored).
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  const staging = mkdtempSync(join(ROOT, "dist", "docs-staging-"));
  try {
    const sources = new Set<string>();
    const docs = markdownFiles(docsDir);
    for (const doc of docs) {
      let text = rewriteLinks(docsDir, doc, readFileSync(join(docsDir, doc), "utf8"), sources);
      if (doc === "README.md") {
        text += "\n## Reference\n\n- [caplo.yaml reference](reference/caplo-yaml.html): every field of a tool package's manifest.\n- [agent.yaml reference](reference/agent-yaml.html): every field of an agent.\n";
      }
      write(staging, doc.replace(/(^|\/)README\.md$/, "$1index.md"), text);
    }
    write(
      staging,
      "reference/caplo-yaml.md",
      referencePage({
        title: "caplo.yaml reference",
        intro: "Every field of a tool package's `caplo.yaml`. Put `# yaml-language-server: $schema=https://docs.caplo.si/schemas/caplo.schema.json` first for completion in your editor.",
        schema: manifestJsonSchema(),
        schemaPath: "../schemas/caplo.schema.json",
      }),
    );
    write(
      staging,
      "reference/agent-yaml.md",
      referencePage({ title: "agent.yaml reference", intro: "Every field of an agent's `agent.yaml`.", schema: agentJsonSchema(), schemaPath: "../schemas/agent.schema.json" }),
    );
    writeSourcePages(staging, sources);
    cpSync(join(dirname(fileURLToPath(import.meta.url)), "_includes"), join(staging, "_includes"), { recursive: true });

    const { Eleventy } = await import("@11ty/eleventy");
    const eleventy = new Eleventy(relative(process.cwd(), staging) || ".", out, {
      quietMode: true,
      configPath: join(dirname(fileURLToPath(import.meta.url)), "eleventy.config.mjs"),
    });
    await eleventy.write();

    mkdirSync(join(out, "schemas"), { recursive: true });
    cpSync(join(ROOT, "schemas", "caplo.schema.json"), join(out, "schemas", "caplo.schema.json"));
    cpSync(join(ROOT, "schemas", "agent.schema.json"), join(out, "schemas", "agent.schema.json"));

    const pagefind = await import("pagefind");
    const { index, errors } = await pagefind.createIndex({});
    if (!index) throw new DocsSiteError("docs_build_failed", `search index: ${errors.join("; ")}`);
    const added = await index.addDirectory({ path: out });
    if (added.errors.length) throw new DocsSiteError("docs_build_failed", `search index: ${added.errors.join("; ")}`);
    const written = await index.writeFiles({ outputPath: join(out, "pagefind") });
    if (written.errors.length) throw new DocsSiteError("docs_build_failed", `search index: ${written.errors.join("; ")}`);
    await pagefind.close();
    rmSync(target, { recursive: true, force: true });
    renameSync(out, target);
    return { pages: added.page_count, out: target };
  } finally {
    rmSync(staging, { recursive: true, force: true });
    rmSync(out, { recursive: true, force: true });
  }
}

/** Whether the built site is older than docs/, the schemas or this generator (then build it again). */
export function docsSiteStale(out = DEFAULT_SITE_DIR): boolean {
  const built = join(out, "index.html");
  if (!existsSync(built)) return true;
  const builtAt = statSync(built).mtimeMs;
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
      const path = join(dir, entry.name);
      return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
    }, 0);
  return Math.max(newest(join(ROOT, "docs")), newest(dirname(fileURLToPath(import.meta.url))), newest(join(ROOT, "schemas"))) > builtAt;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = Date.now();
  buildDocsSite(process.argv[2] ? resolve(process.argv[2]) : undefined).then(
    ({ pages, out }) => console.log(`docs site: ${pages} pages in ${out} (${Date.now() - started} ms)`),
    (error: unknown) => {
      console.error(error instanceof DocsSiteError ? `${error.code}: ${error.message}` : error);
      process.exitCode = 1;
    },
  );
}
