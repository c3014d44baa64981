// A function package returns files with file() and withFiles(): built by `caplo tool build`'s build,
// run by the real runner in its sandbox on Node 24, and the runner's file extraction (type proven from
// the bytes, accept, maxBytes, at most 3) takes them out of the result before the model sees it.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildPackage } from "../../server/src/build/index.ts";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import type { PackageVersion } from "@caplo/shared";

const PDF = "%PDF-1.4\\n% a test invoice\\n%%EOF\\n";
const MANIFEST = `apiVersion: v1
kind: ToolPackage
name: paper
type: function
entry: src/tool.ts
runtime: node24
effect: read
timeoutSeconds: 10
presentation:
  schemaVersion: 1
  title: Paper
  fields:
    - { path: /kind, label: Kind, display: plain }
  files:
    accept: [application/pdf]
    maxBytes: 2048
`;
// One tool, several kinds of answer, so each rule of the extraction is met by a real file from the SDK.
const TOOL = `import { defineTool, file, withFiles } from "@caplo/tools";
const pdf = new TextEncoder().encode("${PDF}");
export default defineTool({
  name: "paper",
  description: "Returns files.",
  inputSchema: { type: "object", properties: { kind: { type: "string", enum: ["pdf", "text", "png_named_pdf", "big", "spaced"] } }, required: ["kind"], additionalProperties: false },
  outputSchema: { type: "object", properties: { invoiceId: { type: "string" } }, required: ["invoiceId"] },
  handler({ kind }) {
    if (kind === "pdf") return withFiles({ invoiceId: "INV-1" }, file({ name: "INV-1.pdf", mimeType: "application/pdf", bytes: pdf }));
    if (kind === "text") return withFiles({ invoiceId: "INV-1" }, file({ name: "notes.pdf", mimeType: "application/pdf", bytes: new TextEncoder().encode("just text") }));
    if (kind === "png_named_pdf") return withFiles({ invoiceId: "INV-1" }, file({ name: "pic.png", mimeType: "image/png", bytes: pdf }));
    if (kind === "big") return withFiles({ invoiceId: "INV-1" }, file({ name: "big.pdf", mimeType: "application/pdf", bytes: new Uint8Array(4096).fill(37) }));
    return withFiles({ invoiceId: "INV-1" }, file({ name: "Invoice 1.pdf", mimeType: "application/pdf", bytes: pdf }));
  },
});
`;

const ARTIFACTS = resolve(import.meta.dirname, "..", "artifacts", "examples");
let dir: string;
let runner: CaploToolRunner;
let version: PackageVersion;
let count = 0;

beforeAll(async () => {
  // Under the repository (git-ignored artifacts): the sandbox gives the package process its own /tmp.
  mkdirSync(ARTIFACTS, { recursive: true });
  dir = mkdtempSync(join(ARTIFACTS, "files-"));
  chmodSync(dir, 0o755); // mkdtemp's 0700 would hide it from the sandboxed process's user
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "caplo.yaml"), MANIFEST);
  writeFileSync(join(dir, "src", "tool.ts"), TOOL);
  const built = await buildPackage(dir);
  if (!built.ok) throw new Error(JSON.stringify(built.errors));
  version = built.version;
  runner = new CaploToolRunner({});
  await runner.load(version);
}, 60_000);

afterAll(async () => {
  await runner?.close();
  rmSync(dir, { recursive: true, force: true });
});

const call = (kind: string) => runner.call({ packageVersionId: version.id, tool: "paper", args: { kind }, context: { invocationId: `inv-files-${++count}`, secrets: {} } });

describe("a function package's files through the runner's sandbox", () => {
  it("the build reports the tool's files presentation", () => {
    expect(version.type).toBe("function");
    expect((version.tools[0]!.policy.presentation as { files?: unknown } | undefined)?.files).toEqual({ accept: ["application/pdf"], maxBytes: 2048 });
  });

  it("delivers a PDF from withFiles(file(...)): the visitor gets the bytes, the model only a note", async () => {
    const result = await call("pdf");
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toEqual({ invoiceId: "INV-1" });
    expect(result.files.map(({ name, mimeType, size }) => ({ name, mimeType, size }))).toEqual([{ name: "INV-1.pdf", mimeType: "application/pdf", size: 32 }]);
    expect(Buffer.from(result.files[0]!.bytes).toString("latin1")).toBe("%PDF-1.4\n% a test invoice\n%%EOF\n");
    expect(result.modelText).toContain('File "INV-1.pdf" (application/pdf, 32 bytes) was taken out of the result');
    expect(result.modelText).not.toContain(Buffer.from("%PDF-1.4").toString("base64").slice(0, 8));
  });

  it("a name with a space arrives as written", async () => {
    const result = await call("spaced");
    expect(result.files.map((delivered) => delivered.name)).toEqual(["Invoice 1.pdf"]);
  });

  it("refuses what the bytes do not prove, a type the declared one contradicts, and a file over maxBytes", async () => {
    const text = await call("text");
    expect(text.files).toEqual([]);
    expect(text.modelText).toContain('File "notes.pdf" was refused and not delivered: its content is not a JPEG, PNG, GIF, WebP or PDF file');
    const mismatch = await call("png_named_pdf");
    expect(mismatch.files).toEqual([]);
    expect(mismatch.modelText).toContain('File "pic.png" was refused and not delivered: declared as image/png but its content is application/pdf');
    const big = await call("big");
    expect(big.files).toEqual([]);
    expect(big.modelText).toContain("4096 bytes is over the tool's maxBytes of 2048");
  });
});
