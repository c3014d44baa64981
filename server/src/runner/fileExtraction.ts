// Takes files out of a tool result before the model sees it: MCP embedded resources with a blob are
// removed; each is delivered only if its type, proven from its first bytes, is in `accept`, it is under
// `maxBytes`, it is one of the first three, it passes the built-in structural checks (fileSafety.ts) and,
// when the operator set one, the file scanner (fileScanner.ts); the model is told what happened to every one.
import { FILES_PER_RESULT_MAX, type FilesPresentation } from "@caplo/shared";
import type { DeliveredFile } from "./api.ts";
import { fileProblem } from "./fileSafety.ts";
import type { FileScanner } from "./fileScanner.ts";

export type FileRefusal = { name: string; code: string; message: string };
export type Extraction = { content: unknown[]; files: DeliveredFile[]; refusals: FileRefusal[]; notes: string[] };

/** The file type its first bytes prove, or undefined for anything Caplo does not deliver. */
export function sniffFileType(bytes: Uint8Array): string | undefined {
  const starts = (...signature: number[]) => signature.every((byte, index) => bytes[index] === byte);
  const ascii = (offset: number, text: string) => [...text].every((char, index) => bytes[offset + index] === char.charCodeAt(0));
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (ascii(0, "GIF87a") || ascii(0, "GIF89a")) return "image/gif";
  if (ascii(0, "RIFF") && ascii(8, "WEBP")) return "image/webp";
  if (ascii(0, "%PDF-")) return "application/pdf";
  return undefined;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** A safe display name from the resource URI: its last path segment, plain characters only. */
export function fileName(uri: unknown, index: number): string {
  let last = "";
  if (typeof uri === "string") {
    try {
      last = decodeURIComponent(new URL(uri).pathname.split("/").pop() ?? "");
    } catch {
      last = uri.split("/").pop() ?? "";
    }
  }
  const clean = last.replace(/[^A-Za-z0-9._ -]/g, "_").replace(/^[.\s]+/, "").slice(0, 100).trim();
  return clean || `file-${index + 1}`;
}

function isBlobResource(item: unknown): item is { type: "resource"; resource: { uri?: unknown; mimeType?: unknown; blob: string } } {
  if (typeof item !== "object" || item === null) return false;
  const candidate = item as { type?: unknown; resource?: { blob?: unknown } };
  return candidate.type === "resource" && typeof candidate.resource?.blob === "string";
}

/** Binary content the model must never see either: MCP image and audio items. */
function isBinaryContent(item: unknown): boolean {
  const type = (item as { type?: unknown } | null)?.type;
  return type === "image" || type === "audio";
}

export function extractFiles(content: readonly unknown[], files: FilesPresentation | undefined): Extraction {
  const kept: unknown[] = [];
  const delivered: DeliveredFile[] = [];
  const refusals: FileRefusal[] = [];
  let seen = 0;
  for (const item of content) {
    if (isBinaryContent(item)) {
      refusals.push({ name: `${(item as { type: string }).type} content`, code: "file_kind", message: "only embedded resources with a blob can carry files" });
      continue;
    }
    if (!isBlobResource(item)) {
      kept.push(item);
      continue;
    }
    const name = fileName(item.resource.uri, seen);
    seen += 1;
    const refuse = (code: string, message: string) => refusals.push({ name, code, message });
    if (!files) {
      refuse("files_not_declared", "this tool declares no presentation.files, so it cannot return files");
      continue;
    }
    if (delivered.length >= FILES_PER_RESULT_MAX) {
      refuse("files_too_many", `at most ${FILES_PER_RESULT_MAX} files per result`);
      continue;
    }
    const blob = item.resource.blob.replace(/\s+/g, "");
    if (!BASE64.test(blob) || blob.length % 4 !== 0) {
      refuse("file_encoding", "the blob is not valid base64");
      continue;
    }
    // Reject before decoding: the decoded size is known from the base64 length.
    const size = (blob.length / 4) * 3 - (blob.endsWith("==") ? 2 : blob.endsWith("=") ? 1 : 0);
    if (size > files.maxBytes) {
      refuse("file_too_large", `${size} bytes is over the tool's maxBytes of ${files.maxBytes}`);
      continue;
    }
    const bytes = new Uint8Array(Buffer.from(blob, "base64"));
    const type = sniffFileType(bytes);
    if (!type) {
      refuse("file_type_unknown", "its content is not a JPEG, PNG, GIF, WebP or PDF file");
      continue;
    }
    if (!(files.accept as readonly string[]).includes(type)) {
      refuse("file_type_not_accepted", `its content is ${type}, which the tool does not accept`);
      continue;
    }
    if (typeof item.resource.mimeType === "string" && item.resource.mimeType.toLowerCase() !== type) {
      refuse("file_type_mismatch", `declared as ${item.resource.mimeType} but its content is ${type}`);
      continue;
    }
    const problem = fileProblem(bytes, type, name);
    if (problem) {
      refuse(problem.code, problem.message);
      continue;
    }
    delivered.push({ name, mimeType: type, size: bytes.length, bytes });
  }
  return { content: kept, files: delivered, refusals, notes: fileNotes(delivered, refusals) };
}

/** What the model is told about each file: taken out for the visitor, or refused and why. */
function fileNotes(delivered: readonly DeliveredFile[], refusals: readonly FileRefusal[]): string[] {
  return [
    ...delivered.map((file) => `[File "${file.name}" (${file.mimeType}, ${file.size} bytes) was taken out of the result for the visitor.]`),
    ...refusals.map((refusal) => `[File "${refusal.name}" was refused and not delivered: ${refusal.message}.]`),
  ];
}

/** The operator's scanner over the files that passed every other check; a file it does not call clean is refused. */
export async function scanFiles(extraction: Extraction, scanner: FileScanner | undefined): Promise<Extraction> {
  if (!scanner || extraction.files.length === 0) return extraction;
  const verdicts = await Promise.all(extraction.files.map((file) => scanner.scan(file)));
  const files = extraction.files.filter((_, index) => verdicts[index]!.clean);
  const refusals = [...extraction.refusals];
  verdicts.forEach((verdict, index) => {
    if (!verdict.clean) refusals.push({ name: extraction.files[index]!.name, code: verdict.code, message: verdict.message });
  });
  return { ...extraction, files, refusals, notes: fileNotes(files, refusals) };
}

/** The refused files the visitor is told about (a binary content item was never a file for them). */
export function undeliveredFiles(extraction: Extraction): { name: string; code: string }[] {
  return extraction.refusals.filter((refusal) => refusal.code !== "file_kind").map(({ name, code }) => ({ name, code }));
}
