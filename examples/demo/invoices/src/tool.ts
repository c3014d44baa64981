// get_invoice: an order's invoice, its totals as the structured result and the PDF as a file for the
// customer. withFiles() sends the PDF as an MCP embedded resource with a blob; Caplo takes it out of the
// result (the model never sees the bytes), proves it is a PDF and offers it as a download.
import { defineTool, file, withFiles } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Invoice = { invoiceId: string; orderId: string; customerName: string; issuedAt: string; status: "paid" | "void"; subtotal: number; tax: number; total: number; currency: string };
type Input = { orderId: string };
type Output = { invoice: Invoice };

export default defineTool<Input, Output>({
  name: "get_invoice",
  description: "Get the invoice of an order, for example SO-1004, as a PDF the customer can download, with its totals.",
  inputSchema: {
    type: "object",
    properties: { orderId: { type: "string", pattern: "^SO-[0-9]{4}$", description: "Order number" } },
    required: ["orderId"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      invoice: {
        type: "object",
        properties: {
          invoiceId: { type: "string" },
          orderId: { type: "string" },
          customerName: { type: "string" },
          issuedAt: { type: "string", format: "date-time" },
          status: { type: "string", enum: ["paid", "void"] },
          subtotal: { type: "number" },
          tax: { type: "number" },
          total: { type: "number" },
          currency: { type: "string" },
        },
        required: ["invoiceId", "orderId", "customerName", "issuedAt", "status", "subtotal", "tax", "total", "currency"],
      },
    },
    required: ["invoice"],
  },
  async handler({ orderId }, { secrets, signal, log }) {
    const invoiceId = orderId.replace(/^SO-/, "INV-");
    const summary = await fetch(shopUrl(secrets, `/invoices/${invoiceId}`), { headers: shopHeaders(secrets), signal });
    if (summary.status === 404) throw new Error(`There is no invoice for order ${orderId}.`);
    if (!summary.ok) throw new Error(`invoice lookup failed with ${summary.status}`);
    const body = (await summary.json()) as Invoice;
    const pdf = await fetch(shopUrl(secrets, `/invoices/${invoiceId}.pdf`), { headers: shopHeaders(secrets, { accept: "application/pdf" }), signal });
    if (!pdf.ok) throw new Error(`invoice PDF failed with ${pdf.status}`);
    const bytes = new Uint8Array(await pdf.arrayBuffer());
    log.info("invoice fetched", { invoiceId, bytes: bytes.length });
    const { customerName, issuedAt, status, subtotal, tax, total, currency } = body;
    return withFiles(
      { invoice: { invoiceId: body.invoiceId, orderId: body.orderId, customerName, issuedAt, status, subtotal, tax, total, currency } },
      file({ name: `${body.invoiceId}.pdf`, mimeType: "application/pdf", bytes }),
    );
  },
});
