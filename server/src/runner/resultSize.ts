// The size of a tool result, counted once, for the seed's "results over 256 KiB fail": the structured
// object and the content items, without the text item that only repeats the structured object as JSON
// (what the SDK's defineTool and the seed's MCP example send beside it). Counting that copy too made a
// 137 KiB object fail.
import { canonicalJson } from "../agents/release.ts";

/** The bytes a result counts against RESULT_BYTES_MAX: the JSON of its content and structured content, the repeated text left out. */
export function resultBytes(content: readonly unknown[], structuredContent: Record<string, unknown> | undefined): number {
  const counted = structuredContent === undefined ? content : withoutCopy(content, structuredContent);
  return Buffer.byteLength(JSON.stringify({ content: counted, structuredContent }));
}

/** The content without its first text item that is the structured object's JSON (any spacing or key order). */
function withoutCopy(content: readonly unknown[], structured: Record<string, unknown>): readonly unknown[] {
  const json = JSON.stringify(structured);
  let canonical: string | undefined;
  const index = content.findIndex((item) => {
    const text = (item as { type?: unknown; text?: unknown } | null)?.type === "text" ? (item as { text: unknown }).text : undefined;
    if (typeof text !== "string") return false;
    if (text === json) return true;
    // A pretty-printed or reordered copy: same value. Only texts that could be one are parsed.
    if (!text.trimStart().startsWith("{") || text.length < json.length || text.length > json.length * 4 + 64) return false;
    try {
      canonical ??= canonicalJson(structured);
      return canonicalJson(JSON.parse(text)) === canonical;
    } catch {
      return false;
    }
  });
  return index === -1 ? content : [...content.slice(0, index), ...content.slice(index + 1)];
}
