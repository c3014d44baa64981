// Files are taken out of every result before the model sees it; only a read tool that declares
// presentation.files gets them delivered (the runner passes no files policy for writes and errors).
import { describe, expect, it } from "vitest";
import { extractFiles, fileName, sniffFileType } from "./fileExtraction.ts";

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
const blob = (name: string, bytes: Buffer, mimeType?: string) => ({ type: "resource", resource: { uri: `file:///${name}`, blob: bytes.toString("base64"), ...(mimeType && { mimeType }) } });
const policy = { accept: ["image/png" as const], maxBytes: 64 };

describe("file extraction", () => {
  it("removes blobs from a result whose tool declares no files, and tells the model", () => {
    const out = extractFiles([{ type: "text", text: "here" }, blob("a.png", PNG)], undefined);
    expect(out.content).toEqual([{ type: "text", text: "here" }]);
    expect(out.files).toEqual([]);
    expect(out.refusals).toEqual([{ name: "a.png", code: "files_not_declared", message: expect.any(String) }]);
    expect(out.notes.join("\n")).not.toContain(PNG.toString("base64"));
  });

  it("refuses image and audio content items, which could carry bytes to the model", () => {
    const out = extractFiles([{ type: "image", data: PNG.toString("base64"), mimeType: "image/png" }, { type: "audio", data: "AAAA", mimeType: "audio/wav" }], policy);
    expect(out.content).toEqual([]);
    expect(out.refusals.map((refusal) => refusal.code)).toEqual(["file_kind", "file_kind"]);
  });

  it("refuses a blob that is not base64, and a declared type the bytes contradict", () => {
    const bad = { type: "resource", resource: { uri: "file:///x.png", blob: "not base64!" } };
    const out = extractFiles([bad, blob("y.png", Buffer.from("%PDF-1.7"), "image/png"), blob("z.png", PNG, "image/jpeg")], { accept: ["image/png", "application/pdf"], maxBytes: 64 });
    expect(out.refusals.map((refusal) => [refusal.name, refusal.code])).toEqual([
      ["x.png", "file_encoding"],
      ["y.png", "file_type_mismatch"],
      ["z.png", "file_type_mismatch"],
    ]);
  });

  it("maxBytes is inclusive: exactly maxBytes is delivered, one more is refused", () => {
    const exact = Buffer.concat([PNG, Buffer.alloc(64 - PNG.length)]);
    const over = Buffer.concat([PNG, Buffer.alloc(65 - PNG.length)]);
    const out = extractFiles([blob("exact.png", exact), blob("over.png", over)], policy);
    expect(out.files.map((file) => [file.name, file.size])).toEqual([["exact.png", 64]]);
    expect(out.refusals).toEqual([{ name: "over.png", code: "file_too_large", message: "65 bytes is over the tool's maxBytes of 64" }]);
  });

  it("proves types from magic bytes and names files safely", () => {
    expect(sniffFileType(PNG)).toBe("image/png");
    expect(sniffFileType(Buffer.from("GIF89a"))).toBe("image/gif");
    expect(sniffFileType(Buffer.from("MZ"))).toBeUndefined();
    // An encoded path in the last segment becomes one plain name: no slashes, no leading dots.
    expect(fileName("file:///dir/..%2F..%2Fetc%2Fpasswd", 0)).toBe("_.._etc_passwd");
    expect(fileName(undefined, 2)).toBe("file-3");
  });
});
