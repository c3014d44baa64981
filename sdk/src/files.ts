// Files a function read tool returns for the visitor: file() checks one file, withFiles() attaches up to
// three to a result. The tool wrapper sends each as an MCP embedded resource with a blob (uri from the
// name, mimeType, base64 bytes), which is what the runner takes out of the result before the model sees it.
import { FILE_MAX_BYTES_MAX, FILE_TYPES, FILES_PER_RESULT_MAX } from "@caplo/shared/limits";

export type FileType = (typeof FILE_TYPES)[number];

/** What file() takes. */
export type FileInput = {
  /** The name the visitor downloads, for example INV-1004.pdf: letters, digits, `.`, `_`, `-` and spaces, at most 100. */
  name: string;
  /** One of the types caplo.yaml's presentation.files.accept may list. Caplo proves it from the bytes. */
  mimeType: FileType;
  /** The file's content: a Uint8Array (a Node Buffer is one) or an ArrayBuffer, as from `await response.arrayBuffer()`. */
  bytes: Uint8Array | ArrayBuffer;
};

/** Tags files and results with files; Symbol.for so two copies of the SDK in one process agree. */
export const FILE_TAG: unique symbol = Symbol.for("si.caplo/tools.file") as never;
export const WITH_FILES_TAG: unique symbol = Symbol.for("si.caplo/tools.with-files") as never;

export type ToolFile = { readonly [FILE_TAG]: true; readonly name: string; readonly mimeType: FileType; readonly bytes: Uint8Array };
export type WithFiles<T> = { readonly [WITH_FILES_TAG]: true; readonly result: T; readonly files: readonly ToolFile[] };

/**
 * The visitor's download name: the characters Caplo keeps when it names a file from its URI, so what
 * the tool names is exactly what the visitor sees. No leading dot or space, no trailing space.
 */
export const FILE_NAME_PATTERN = /^[A-Za-z0-9_-](?:[A-Za-z0-9._ -]{0,98}[A-Za-z0-9._-])?$/;

/** A file for the visitor. Throws a TypeError naming the problem when the name, type or bytes are wrong. */
export function file(input: FileInput): ToolFile {
  if (input === null || typeof input !== "object") throw new TypeError("file({ name, mimeType, bytes }) needs an object");
  const { name, mimeType, bytes } = input;
  if (typeof name !== "string" || !FILE_NAME_PATTERN.test(name)) {
    throw new TypeError(`file(): name must be 1 to 100 letters, digits, '.', '_', '-' or spaces, not starting with '.' or a space, got ${JSON.stringify(name)}`);
  }
  if (!(FILE_TYPES as readonly unknown[]).includes(mimeType)) {
    throw new TypeError(`file(): mimeType must be one of ${FILE_TYPES.join(", ")}, got ${JSON.stringify(mimeType)}`);
  }
  const view = bytes instanceof Uint8Array ? bytes : bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : undefined;
  if (!view) throw new TypeError("file(): bytes must be a Uint8Array (or Buffer) or an ArrayBuffer");
  if (view.byteLength === 0) throw new TypeError(`file(): ${name} is empty`);
  if (view.byteLength > FILE_MAX_BYTES_MAX) throw new TypeError(`file(): ${name} is ${view.byteLength} bytes, over the ${FILE_MAX_BYTES_MAX} bytes Caplo ever delivers`);
  return Object.freeze({ [FILE_TAG]: true as const, name, mimeType, bytes: view });
}

/**
 * A result with files: the result goes to the model and the presentation as usual (an object is the
 * structured result, a string is text); the files go to the visitor. At most 3 files.
 */
export function withFiles<T>(result: T, ...files: ToolFile[]): WithFiles<T> {
  if (files.length === 0) throw new TypeError("withFiles(result, ...files) needs at least one file made by file()");
  if (files.length > FILES_PER_RESULT_MAX) throw new TypeError(`withFiles(): at most ${FILES_PER_RESULT_MAX} files per result, got ${files.length}`);
  files.forEach((item, index) => {
    if (!isFile(item)) throw new TypeError(`withFiles(): file ${index + 1} was not made by file({ name, mimeType, bytes })`);
  });
  const names = files.map((item) => item.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated) throw new TypeError(`withFiles(): two files are named ${repeated}`);
  return Object.freeze({ [WITH_FILES_TAG]: true as const, result, files: Object.freeze([...files]) });
}

export function isFile(value: unknown): value is ToolFile {
  return value !== null && typeof value === "object" && (value as { [FILE_TAG]?: unknown })[FILE_TAG] === true;
}

export function isWithFiles(value: unknown): value is WithFiles<unknown> {
  return value !== null && typeof value === "object" && (value as { [WITH_FILES_TAG]?: unknown })[WITH_FILES_TAG] === true;
}

/** The MCP embedded resource with a blob that carries one file: the URI names it, the blob is base64. */
export function fileResource(item: ToolFile): { type: "resource"; resource: { uri: string; mimeType: string; blob: string } } {
  return {
    type: "resource",
    resource: { uri: `file:///${encodeURIComponent(item.name)}`, mimeType: item.mimeType, blob: Buffer.from(item.bytes.buffer, item.bytes.byteOffset, item.bytes.byteLength).toString("base64") },
  };
}
