import { deflateSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { PDF_STREAM_KEYWORDS_MAX, PDF_STREAMS_MAX, fileProblem } from "./fileSafety.ts";

const pdf = (body: string) => new Uint8Array(Buffer.from(`%PDF-1.7\n1 0 obj\n${body}\nendobj\n%%EOF\n`, "latin1"));
const withStream = (inner: string) => {
  const packed = deflateSync(Buffer.from(inner, "latin1"));
  return new Uint8Array(Buffer.concat([Buffer.from("%PDF-1.7\n2 0 obj\n<< /Type /ObjStm /Filter /FlateDecode /Length " + packed.length + " >>\nstream\n", "latin1"), packed, Buffer.from("\nendstream\nendobj\n%%EOF\n", "latin1")]));
};
const png = (chunk = "IHDR") => new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, ...Buffer.from(chunk), 0, 0, 0, 1]);

describe("built-in file checks", () => {
  it("delivers a plain PDF and a well-formed PNG", () => {
    expect(fileProblem(pdf("<< /Type /Catalog /Pages 2 0 R >>"), "application/pdf", "invoice.pdf")).toBeUndefined();
    expect(fileProblem(withStream("<< /Type /Page >>"), "application/pdf", "invoice.pdf")).toBeUndefined();
    expect(fileProblem(png(), "image/png", "photo.png")).toBeUndefined();
  });

  it("refuses a PDF with JavaScript, a launch action or embedded files, also hex-escaped or in a compressed stream", () => {
    for (const [body, what] of [
      ["<< /OpenAction << /S /JavaScript /JS (app.alert(1)) >> >>", "JavaScript"],
      ["<< /AA << /O << /S /JS >> >> >>", "JavaScript"],
      ["<< /OpenAction << /S /Launch /F (cmd.exe) >> >>", "a launch action"],
      ["<< /Names << /EmbeddedFiles 3 0 R >> >>", "embedded files"],
      ["<< /Type /EmbeddedFile >>", "an embedded file"],
      ["<< /S /J#61va#53cript >>", "JavaScript"],
    ]) {
      expect(fileProblem(pdf(body!), "application/pdf", "x.pdf"), body).toEqual({ code: "file_unsafe", message: `the PDF contains ${what}` });
    }
    expect(fileProblem(withStream("<< /S /JavaScript /JS (x) >>"), "application/pdf", "x.pdf")).toEqual({ code: "file_unsafe", message: "the PDF contains JavaScript (in a compressed stream)" });
    // Names are whole: /JSON or /Launched are not actions.
    expect(fileProblem(pdf("<< /JSON 1 /Launched 2 >>"), "application/pdf", "x.pdf")).toBeUndefined();
  });

  it("examines at most PDF_STREAMS_MAX compressed streams: a PDF of more (each a zlib inflation on the server's thread) is not delivered", () => {
    const streams = (count: number, body: Buffer) =>
      new Uint8Array(Buffer.concat([Buffer.from("%PDF-1.7\n", "latin1"), ...Array.from({ length: count }, () => Buffer.concat([Buffer.from("<</Filter/Fl>>stream\n", "latin1"), body, Buffer.from("\nendstream\n", "latin1")])), Buffer.from("%%EOF\n", "latin1")]));
    const packed = deflateSync(Buffer.from("<< /Type /Page >>", "latin1"));
    expect(fileProblem(streams(PDF_STREAMS_MAX, packed), "application/pdf", "report.pdf")).toBeUndefined();
    const refusal = { code: "file_unsafe", message: `the PDF has over ${PDF_STREAMS_MAX} compressed streams, too many to examine` };
    expect(fileProblem(streams(PDF_STREAMS_MAX + 1, packed), "application/pdf", "report.pdf")).toEqual(refusal);
    // Streams that do not even inflate count the same (each failed inflation costs more than a good one).
    expect(fileProblem(streams(PDF_STREAMS_MAX + 1, Buffer.from("X")), "application/pdf", "report.pdf")).toEqual(refusal);
  });

  it("looks at most PDF_STREAM_KEYWORDS_MAX stream keywords: a PDF of more (each a look at the dictionary before it) is not delivered", () => {
    // Streams that are not compressed (an image's) are looked at and passed over: their `stream` and `endstream` both count.
    const keywords = (count: number) => new Uint8Array(Buffer.from(`%PDF-1.7\n${"<</Filter/DCTDecode>>stream\nX\nendstream\n".repeat(count / 2)}${count % 2 ? "stream " : ""}%%EOF\n`, "latin1"));
    expect(fileProblem(keywords(PDF_STREAM_KEYWORDS_MAX), "application/pdf", "photos.pdf")).toBeUndefined();
    expect(fileProblem(keywords(PDF_STREAM_KEYWORDS_MAX + 1), "application/pdf", "photos.pdf")).toEqual({
      code: "file_unsafe",
      message: `the PDF has over ${PDF_STREAM_KEYWORDS_MAX} stream keywords, too many to examine`,
    });
    // The file that took 0.6 s of the server's thread: 10 MiB of nothing but the word.
    expect(fileProblem(new Uint8Array(Buffer.from(`%PDF-1.7\n${"stream".repeat((10 * 1024 * 1024) / 6)}`, "latin1")), "application/pdf", "x.pdf")).toMatchObject({ code: "file_unsafe" });
  });

  it("refuses an image whose name says another type than its header, or whose header is malformed", () => {
    expect(fileProblem(png(), "image/png", "photo.jpg")).toEqual({ code: "file_type_mismatch", message: "its name says image/jpeg but its content is image/png" });
    expect(fileProblem(png(), "image/png", "report.pdf")).toMatchObject({ code: "file_type_mismatch" });
    expect(fileProblem(png("tEXt"), "image/png", "photo.png")).toEqual({ code: "file_unsafe", message: "its image/png header is malformed (the first chunk is not IHDR)" });
    expect(fileProblem(new Uint8Array(Buffer.from("RIFF\0\0\0\0WEBPJUNK")), "image/webp", "a.webp")).toMatchObject({ code: "file_unsafe" });
    expect(fileProblem(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16]), "image/jpeg", "a.jpeg")).toBeUndefined();
  });
});
