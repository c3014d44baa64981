// The page layout: a button that opens the item's link in a sandboxed panel over the chat, or in a new
// tab. The link must be https (http only on loopback) and from one of the listed origins, or no button
// is shown. The page never decides an outcome: the agent confirms it with a read tool.
import { useWidget } from "../context.ts";
import { clampText, originOf, safeUrl } from "../format.ts";
import { itemsOf, type ResultMessage } from "./common.tsx";

/** The page URL if it is safe and its origin is one of the listed ones. */
export function pageUrl(result: ResultMessage): string | null {
  const item = itemsOf(result)[0];
  const key = result.page?.urlKey ?? result.columns.find((c) => c.role === "link")?.key;
  if (!item || !key || !result.page) return null;
  const url = safeUrl(item[key]);
  const origin = url && originOf(url);
  return origin && result.page.origins.includes(origin) ? url : null;
}

export function PageLink({ result }: { result: ResultMessage }) {
  const { t, openPage } = useWidget();
  const page = result.page;
  const url = pageUrl(result);
  if (!page || !url) return <p class="muted">{t.pageUnavailable}</p>;
  const label = clampText(page.label, 40);
  if (page.display === "tab") {
    return (
      <a class="button primary" href={url} target="_blank" rel="noopener noreferrer">
        {label}
        <span class="sr-only"> {t.newTab}</span>
      </a>
    );
  }
  return (
    <button type="button" class="primary" onClick={() => openPage(url, page.origins, result.title)}>
      {label}
      <span class="sr-only"> ({t.openPage})</span>
    </button>
  );
}
