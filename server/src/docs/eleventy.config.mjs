// Eleventy's configuration for the docs site (scripts/docs-site/build.ts stages the pages and runs it).
// Markdown only, no template language inside it (the docs show {{1}}-style Twilio variables literally);
// every page gets the one layout, keeps its docs/ path with .html, and its headings get GitHub's ids so
// the docs' #anchors work.

/** GitHub's heading slugs: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function slugger() {
  const seen = new Map();
  return (text) => {
    const base = text.toLowerCase().trim().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return count === 0 ? base : `${base}-${count}`;
  };
}

export default function (config) {
  // The pages are staged under dist/, which .gitignore lists.
  config.setUseGitIgnore(false);
  config.addGlobalData("layout", "page.njk");
  config.addGlobalData("permalink", () => (data) => `${data.page.filePathStem}.html`);
  config.amendLibrary("md", (md) => {
    md.core.ruler.push("heading_ids", (state) => {
      const slug = slugger();
      state.tokens.forEach((token, index) => {
        if (token.type !== "heading_open") return;
        const inline = state.tokens[index + 1];
        const text = inline.children.filter((child) => child.type === "text" || child.type === "code_inline").map((child) => child.content).join("");
        token.attrSet("id", slug(text));
      });
    });
  });
  // "../" for each folder between the page and the site's root, so the site works under any prefix (/docs/).
  config.addFilter("rootPrefix", (url) => "../".repeat(Math.max(0, url.split("/").length - 2)));
  config.addFilter("pageTitle", (content) => {
    const match = /<h1[^>]*>([\s\S]*?)<\/h1>/.exec(content);
    return match ? match[1].replace(/<[^>]+>/g, "") : "Caplo";
  });
  return {
    templateFormats: ["md", "njk"],
    markdownTemplateEngine: false,
    htmlTemplateEngine: "njk",
    dir: { includes: "_includes" },
  };
}
