// A minimal, valid PDF 1.4 writer for invoices: one A4 page of Helvetica text lines, with a correct
// cross-reference table, so any PDF reader opens it and content sniffing sees %PDF-.

/** Escapes a string for a PDF literal string; keeps to printable ASCII (WinAnsi covers it). */
function pdfString(text: string): string {
  const ascii = text.replace(/[^\x20-\x7E]/g, "?");
  return `(${ascii.replace(/\\/g, "\\\\").replace(/\(/g, "\\(").replace(/\)/g, "\\)")})`;
}

export type PdfLine = { text: string; size?: number; bold?: boolean };

/** Renders lines top to bottom on one page and returns the file's bytes. */
export function renderPdf(title: string, lines: PdfLine[]): Buffer {
  let y = 790;
  const ops: string[] = ["BT"];
  for (const line of lines) {
    const size = line.size ?? 11;
    y -= Math.round(size * 1.6);
    ops.push(`/${line.bold ? "F2" : "F1"} ${size} Tf`, `1 0 0 1 56 ${y} Tm`, `${pdfString(line.text)} Tj`);
  }
  ops.push("ET");
  const content = ops.join("\n");
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 4 0 R /F2 5 0 R >> >> /Contents 6 0 R >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
    `<< /Length ${Buffer.byteLength(content, "latin1")} >>\nstream\n${content}\nendstream`,
    `<< /Title ${pdfString(title)} /Producer (Caplo demo shop) >>`,
  ];
  let out = "%PDF-1.4\n%\xE2\xE3\xCF\xD3\n";
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    offsets.push(Buffer.byteLength(out, "latin1"));
    out += `${index + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xrefAt = Buffer.byteLength(out, "latin1");
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info ${objects.length} 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return Buffer.from(out, "latin1");
}
