// Built-in structural checks of a file a tool returns, before a visitor may download it (seed 002: Caplo
// "proves the type from the content, scans them"). A PDF that can act when opened is refused: JavaScript
// (/JS, /JavaScript), launch actions (/Launch) or embedded files (/EmbeddedFile, /EmbeddedFiles), found in
// the file's own bytes and in its Flate-compressed streams, with `#xx` escapes in names decoded. An image
// is refused when its declared type or its name's extension says another type than its header, or when
// its header is not a well-formed start of that type.
import { inflateSync } from "node:zlib";

export type FileProblem = { code: "file_unsafe" | "file_type_mismatch"; message: string };

/** PDF names that run code or carry other files when the document is opened. */
const ACTIVE_PDF_NAMES = new Map([
  ["javascript", "JavaScript"],
  ["js", "JavaScript"],
  ["launch", "a launch action"],
  ["embeddedfile", "an embedded file"],
  ["embeddedfiles", "embedded files"],
]);
/** Decompressed stream bytes examined per file at most (a small PDF may inflate to much more). */
const INFLATE_MAX_BYTES = 32 * 1024 * 1024;
/**
 * Compressed streams examined per PDF at most. Each costs a zlib inflation on the server's thread (tens to
 * hundreds of microseconds even for a few bytes), and a 10 MiB PDF can hold 300,000 tiny ones: a minute of
 * the server's time for one file. A PDF with more is not delivered, as one too large to examine.
 */
export const PDF_STREAMS_MAX = 1000;
/**
 * `stream` keywords looked at per PDF at most (a stream's own and its `endstream`): each costs a look at the
 * dictionary before it, and a 10 MiB PDF of nothing but the word held 1.7 million of them, 0.6 s of the
 * server's thread for one file. Room for 10,000 streams that are not compressed (images); a PDF with more is
 * not delivered, as one too large to examine.
 */
export const PDF_STREAM_KEYWORDS_MAX = 20 * PDF_STREAMS_MAX;

const EXTENSIONS: Record<string, string> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
};

/** What is wrong with a file whose content is `type` (already proven from its first bytes), or undefined. */
export function fileProblem(bytes: Uint8Array, type: string, name: string): FileProblem | undefined {
  const extension = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  const named = extension === undefined ? undefined : EXTENSIONS[extension];
  if (named !== undefined && named !== type) return { code: "file_type_mismatch", message: `its name says ${named} but its content is ${type}` };
  if (type === "application/pdf") return pdfProblem(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return imageProblem(bytes, type);
}

function imageProblem(bytes: Uint8Array, type: string): FileProblem | undefined {
  const ascii = (offset: number, text: string) => [...text].every((char, index) => bytes[offset + index] === char.charCodeAt(0));
  const bad = (why: string): FileProblem => ({ code: "file_unsafe", message: `its ${type} header is malformed (${why})` });
  if (type === "image/png" && !ascii(12, "IHDR")) return bad("the first chunk is not IHDR");
  if (type === "image/webp" && !(ascii(12, "VP8 ") || ascii(12, "VP8L") || ascii(12, "VP8X"))) return bad("no VP8 chunk");
  if (type === "image/jpeg" && bytes[3] !== undefined && (bytes[3] < 0xc0 || bytes[3] === 0xff)) return bad("no marker after the start of image");
  return undefined;
}

function pdfProblem(bytes: Buffer): FileProblem | undefined {
  const found = activeName(bytes.toString("latin1"));
  if (found) return { code: "file_unsafe", message: `the PDF contains ${found}` };
  let budget = INFLATE_MAX_BYTES;
  let streams = 0;
  for (const stream of flateStreams(bytes)) {
    if (stream === TOO_MANY_KEYWORDS) return { code: "file_unsafe", message: `the PDF has over ${PDF_STREAM_KEYWORDS_MAX} stream keywords, too many to examine` };
    if (++streams > PDF_STREAMS_MAX) return { code: "file_unsafe", message: `the PDF has over ${PDF_STREAMS_MAX} compressed streams, too many to examine` };
    let inflated: Buffer;
    try {
      inflated = inflateSync(stream, { maxOutputLength: budget });
    } catch (error) {
      // Over the budget: what cannot be examined is not delivered. A damaged stream shows nothing.
      if ((error as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") return { code: "file_unsafe", message: "the PDF's compressed content is too large to examine" };
      continue;
    }
    budget -= inflated.length;
    const inner = activeName(inflated.toString("latin1"));
    if (inner) return { code: "file_unsafe", message: `the PDF contains ${inner} (in a compressed stream)` };
    if (budget <= 0) return { code: "file_unsafe", message: "the PDF's compressed content is too large to examine" };
  }
  return undefined;
}

/** The first active PDF name in the text (names compared decoded: /J#61vaScript is /JavaScript). */
function activeName(text: string): string | undefined {
  for (const match of text.matchAll(/\/((?:[A-Za-z0-9]|#[0-9A-Fa-f]{2})+)/g)) {
    const name = match[1]!.replace(/#([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))).toLowerCase();
    const what = ACTIVE_PDF_NAMES.get(name);
    if (what) return what;
  }
  return undefined;
}

const TOO_MANY_KEYWORDS = Symbol("too many stream keywords");

/**
 * The raw bytes of each stream that a FlateDecode filter names (dictionary before `stream`); last,
 * TOO_MANY_KEYWORDS when the PDF holds over PDF_STREAM_KEYWORDS_MAX `stream` keywords.
 */
function* flateStreams(bytes: Buffer): Generator<Buffer | typeof TOO_MANY_KEYWORDS> {
  let from = 0;
  let keywords = 0;
  for (;;) {
    const start = bytes.indexOf("stream", from, "latin1");
    if (start === -1) return;
    if (++keywords > PDF_STREAM_KEYWORDS_MAX) {
      yield TOO_MANY_KEYWORDS;
      return;
    }
    from = start + 6;
    // "endstream" contains "stream": skip it.
    if (start >= 3 && bytes.toString("latin1", start - 3, start) === "end") continue;
    const dictionary = bytes.toString("latin1", Math.max(0, start - 512), start);
    if (!/\/FlateDecode\b|\/Fl\b/.test(dictionary.slice(dictionary.lastIndexOf("<<")))) continue;
    let body = start + 6;
    if (bytes[body] === 0x0d) body += 1;
    if (bytes[body] === 0x0a) body += 1;
    const end = bytes.indexOf("endstream", body, "latin1");
    if (end === -1) return;
    from = end + 9;
    yield bytes.subarray(body, end);
  }
}
