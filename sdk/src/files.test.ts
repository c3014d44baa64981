import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { CALL_META_KEY, EFFECT_META_KEY } from "@caplo/shared/outcome";
import { defineTool, file, pending, withFiles, type Tool } from "./index.ts";

const PDF = Buffer.from("%PDF-1.4\n% a tiny test file\n%%EOF\n");
const PNG = new Uint8Array(Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"));

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((client) => client.close()));
});

async function callTool(tool: Tool<never, never> | Tool, args: Record<string, unknown> = {}) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = new Client({ name: "test", version: "1" });
  await (tool as Tool).createServer().connect(serverSide);
  await client.connect(clientSide);
  open.push(client);
  const _meta = { [CALL_META_KEY]: { invocationId: "inv_1", deadline: new Date(Date.now() + 10_000).toISOString(), secrets: {} } };
  return client.request({ method: "tools/call", params: { name: (tool as Tool).name, arguments: args, _meta } }, CallToolResultSchema);
}

const invoiceTool = (handler: () => unknown) =>
  defineTool({
    name: "get_invoice",
    description: "An invoice as a PDF.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    outputSchema: { type: "object", properties: { invoiceId: { type: "string" } }, required: ["invoiceId"] },
    handler: handler as never,
  });

describe("file(): one file for the visitor", () => {
  it("keeps the name, type and bytes; a Buffer, a Uint8Array and an ArrayBuffer are all bytes", () => {
    const fromBuffer = file({ name: "INV-1004.pdf", mimeType: "application/pdf", bytes: PDF });
    expect([fromBuffer.name, fromBuffer.mimeType, Buffer.from(fromBuffer.bytes).equals(PDF)]).toEqual(["INV-1004.pdf", "application/pdf", true]);
    const arrayBuffer = PNG.buffer.slice(PNG.byteOffset, PNG.byteOffset + PNG.byteLength);
    expect(file({ name: "chart.png", mimeType: "image/png", bytes: arrayBuffer }).bytes).toEqual(PNG);
    expect(file({ name: "Receipt 12.png", mimeType: "image/png", bytes: PNG }).name).toBe("Receipt 12.png");
  });

  it("refuses a name the visitor would not see as written, naming the rule", () => {
    for (const name of ["", ".hidden.pdf", " x.pdf", "x.pdf ", "a/b.pdf", "in<voice>.pdf", "x".repeat(101), "č.pdf"]) {
      expect(() => file({ name, mimeType: "application/pdf", bytes: PDF }), name).toThrow(/name must be 1 to 100 letters, digits/);
    }
    expect(file({ name: "x".repeat(100), mimeType: "application/pdf", bytes: PDF }).name).toHaveLength(100);
  });

  it("refuses a type Caplo never delivers, empty bytes, bytes that are not bytes, and more than 10 MiB", () => {
    expect(() => file({ name: "a.txt", mimeType: "text/plain" as never, bytes: PDF })).toThrow("mimeType must be one of image/jpeg, image/png, image/gif, image/webp, application/pdf");
    expect(() => file({ name: "a.pdf", mimeType: "application/pdf", bytes: new Uint8Array(0) })).toThrow("a.pdf is empty");
    expect(() => file({ name: "a.pdf", mimeType: "application/pdf", bytes: PDF.toString("base64") as never })).toThrow("bytes must be a Uint8Array");
    expect(() => file({ name: "a.pdf", mimeType: "application/pdf", bytes: new Uint8Array(10_485_761) })).toThrow("10485761 bytes, over the 10485760 bytes");
  });

  it("is typed: only the deliverable types and byte containers compile", () => {
    // @ts-expect-error text/plain is not a type presentation.files may accept
    expect(() => file({ name: "a.txt", mimeType: "text/plain", bytes: PDF })).toThrow();
    // @ts-expect-error bytes are bytes, not base64 text
    expect(() => file({ name: "a.pdf", mimeType: "application/pdf", bytes: "JVBERi0=" })).toThrow();
  });

  it("is typed: with <Input, Output>, withFiles around an Output compiles and around another type does not", () => {
    type Output = { invoiceId: string };
    const inputSchema = { type: "object", properties: {} } as const;
    const pdf = () => file({ name: "a.pdf", mimeType: "application/pdf", bytes: PDF });
    const typed = defineTool<Record<string, never>, Output>({ name: "typed", description: "d", inputSchema, handler: () => withFiles({ invoiceId: "INV-1" }, pdf()) });
    const asText = defineTool<Record<string, never>, Output>({ name: "text", description: "d", inputSchema, handler: async () => withFiles("Here it is.", pdf()) });
    // @ts-expect-error invoiceId is a string in Output
    const wrong = defineTool<Record<string, never>, Output>({ name: "wrong", description: "d", inputSchema, handler: () => withFiles({ invoiceId: 7 }, pdf()) });
    expect([typed.name, asText.name, wrong.name]).toEqual(["typed", "text", "wrong"]);
  });
});

describe("withFiles(): a result with files", () => {
  it("refuses no files, more than three, files not made by file(), and two with one name", () => {
    const one = file({ name: "a.pdf", mimeType: "application/pdf", bytes: PDF });
    expect(() => withFiles({})).toThrow("needs at least one file");
    const four = ["a", "b", "c", "d"].map((name) => file({ name: `${name}.pdf`, mimeType: "application/pdf", bytes: PDF }));
    expect(() => withFiles({}, ...four)).toThrow("at most 3 files per result, got 4");
    expect(() => withFiles({}, { name: "a.pdf", mimeType: "application/pdf", bytes: PDF } as never)).toThrow("file 1 was not made by file(");
    expect(() => withFiles({}, one, file({ name: "a.pdf", mimeType: "application/pdf", bytes: PDF }))).toThrow("two files are named a.pdf");
  });
});

describe("the function tool wrapper sends files as MCP embedded resources with a blob", () => {
  it("keeps the structured result and its JSON text, and adds one resource per file (uri names it, base64 blob)", async () => {
    const tool = invoiceTool(() =>
      withFiles({ invoiceId: "INV-1004" }, file({ name: "INV-1004.pdf", mimeType: "application/pdf", bytes: PDF }), file({ name: "Stamp 1.png", mimeType: "image/png", bytes: PNG })),
    );
    const result = await callTool(tool);
    expect(result).toEqual({
      content: [
        { type: "text", text: '{"invoiceId":"INV-1004"}' },
        { type: "resource", resource: { uri: "file:///INV-1004.pdf", mimeType: "application/pdf", blob: PDF.toString("base64") } },
        { type: "resource", resource: { uri: "file:///Stamp%201.png", mimeType: "image/png", blob: Buffer.from(PNG).toString("base64") } },
      ],
      structuredContent: { invoiceId: "INV-1004" },
      _meta: { [EFFECT_META_KEY]: { version: 1, outcome: "applied" } },
    });
  });

  it("a string result with a file: text, then the file", async () => {
    const tool = defineTool({
      name: "chart",
      description: "A chart.",
      inputSchema: { type: "object", properties: {} },
      handler: () => withFiles("Here is the chart.", file({ name: "chart.png", mimeType: "image/png", bytes: PNG })),
    });
    const result = await callTool(tool);
    expect(result.content.map((item) => item.type)).toEqual(["text", "resource"]);
    expect(result.content[0]).toEqual({ type: "text", text: "Here is the chart." });
  });

  it("a result that does not match outputSchema fails the call and delivers no file", async () => {
    const result = await callTool(invoiceTool(() => withFiles({ invoice: "INV-1" }, file({ name: "a.pdf", mimeType: "application/pdf", bytes: PDF }))));
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: expect.stringContaining("the result does not match outputSchema") }]);
  });

  it("withFiles around an outcome other than applied is an error result without files", async () => {
    const result = await callTool(invoiceTool(() => withFiles(pending("op_1"), file({ name: "a.pdf", mimeType: "application/pdf", bytes: PDF }))));
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: "withFiles() carries a result (an object or a string), not rejected, pending or stepUpRequired" }]);
  });

  it("a file() that throws in the handler is an error result the model sees", async () => {
    const result = await callTool(invoiceTool(() => withFiles({ invoiceId: "INV-1" }, file({ name: "../x.pdf", mimeType: "application/pdf", bytes: PDF }))));
    expect(result.isError).toBe(true);
    expect((result.content[0] as { text: string }).text).toContain("file(): name must be");
  });
});
