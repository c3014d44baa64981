// One conversation row that is not a card: visitor, agent, team and system text, handoff notices,
// files, questions, step-up prompts and results. Agent and team text may use the small Markdown subset;
// everything else is plain text.
import type { Outbound, OutboundOf } from "@caplo/shared";
import { useMemo, useRef, useState } from "preact/hooks";
import { useWidget } from "../context.ts";
import { clampText, formatSize, originOf, safeUrl } from "../format.ts";
import { markdownToHtml } from "../markdown.ts";
import { Result } from "../layouts/Result.tsx";
import { Question } from "./Question.tsx";
import { StepUp } from "./StepUp.tsx";

/** Agent text longer than this is cut; the inbound limit is 4000, and a reply should never be a book. */
export const AGENT_TEXT_SHOWN_MAX = 8000;

/** `expanded`: a long text starts open (a reply the visitor watched being written). */
export function Message({ message, expanded }: { message: Outbound; expanded?: boolean | undefined }) {
  switch (message.type) {
    case "text":
      return <Text message={message} expanded={expanded ?? false} />;
    case "handoff":
      return (
        <p class={`notice handoff handoff-${message.state}`} dir="auto">
          {clampText(message.text, 1000)}
        </p>
      );
    case "file":
      return <FileDownload file={message} />;
    case "question":
      return <Question question={message} />;
    case "step_up":
      return <StepUp prompt={message} />;
    case "result":
      return <Result result={message} />;
    default:
      return null;
  }
}

/** Agent text longer than this starts collapsed, with "Show more" (unless the visitor watched it being written). */
export const COLLAPSE_FROM = 700;

function Text({ message, expanded }: { message: OutboundOf<"text">; expanded: boolean }) {
  const { t, labels } = useWidget();
  const who = { customer: t.you, agent: t.agent, team: t.team, system: t.system }[message.from];
  const rich = message.from === "agent" || message.from === "team";
  const html = useMemo(() => (rich ? markdownToHtml(clampText(message.text, AGENT_TEXT_SHOWN_MAX)) : ""), [message.text, rich]);
  const long = rich && message.text.length > COLLAPSE_FROM;
  const [open, setOpen] = useState(expanded);
  // A tapped choice's reply carries ids for the agent ("Book slot SL-…"); the visitor sees what they tapped.
  const shown = message.from === "customer" ? (labels[message.text] ?? message.text) : message.text;
  return (
    // dir="auto" on the text, not the bubble: the screen-reader prefix ("Assistant: ") would make every
    // bubble left to right, an Arabic or Hebrew reply too.
    <div class={`bubble from-${message.from}${long && !open ? " collapsed" : ""}`}>
      <span class="sr-only">{who}: </span>
      {message.from === "team" && <span class="who">{who}</span>}
      {rich ? (
        // markdownToHtml escapes the text and DOMPurify keeps only the subset's tags and https links.
        <div class="text" dir="auto" id={`${message.id}-text`} dangerouslySetInnerHTML={{ __html: html }} />
      ) : (
        <div class="text plain" dir="auto">
          {clampText(shown, AGENT_TEXT_SHOWN_MAX)}
        </div>
      )}
      {long && (
        <button type="button" class="link more-toggle" aria-expanded={open} aria-controls={`${message.id}-text`} onClick={() => setOpen(!open)}>
          {open ? t.showLess : t.showMore}
        </button>
      )}
    </div>
  );
}

/**
 * A file from a read tool: a download link with its name, type and size. A file the gateway serves (same
 * origin) is fetched first, so a file purged by retention (410 file_expired) or missing says so in the
 * card instead of a broken download; the bytes fetched are then saved under the file's name.
 */
export function FileDownload({ file }: { file: OutboundOf<"file"> }) {
  const { t, locale } = useWidget();
  const [problem, setProblem] = useState<string | null>(null);
  const busy = useRef(false);
  // Files are served by the gateway, so a path on the widget's own host is fine too.
  const href = safeUrl(file.url, location.href);
  const name = clampText(file.name, 200);
  const type = t.fileType[file.mimeType] ?? file.mimeType;
  const size = formatSize(file.size, locale);

  async function download(event: MouseEvent) {
    // Another origin cannot be fetched from here (connect-src 'self'): the plain link does its job.
    if (!href || originOf(href) !== location.origin) return;
    event.preventDefault();
    if (busy.current) return;
    busy.current = true;
    try {
      // Not from the browser's cache: a copy kept from before would hide that the file has since expired.
      const response = await fetch(href, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) return setProblem(response.status === 410 ? t.fileExpired : response.status === 404 ? t.fileMissing : t.fileFailed);
      const saved = URL.createObjectURL(await response.blob());
      const a = document.createElement("a");
      a.href = saved;
      a.download = name;
      a.rel = "noopener";
      a.click();
      setProblem(null);
      // The browser has taken the bytes by the next minute; the object URL is not needed after that.
      setTimeout(() => URL.revokeObjectURL(saved), 60_000);
    } catch {
      setProblem(t.fileFailed);
    } finally {
      busy.current = false;
    }
  }

  return (
    <div class={`card file${problem ? " file-problem" : ""}`}>
      {href ? (
        <a href={href} download={name} rel="noopener noreferrer" aria-label={t.download.replace("{name}", name)} onClick={(e) => void download(e)}>
          <span class="file-icon" aria-hidden="true">
            ⤓
          </span>
          <span class="file-name">{name}</span>
        </a>
      ) : (
        <span class="file-name">{name}</span>
      )}
      <span class="muted">
        {type} · {size}
      </span>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
    </div>
  );
}
