// The invoices MCP package: get_invoice returns an invoice summary for the model and the PDF as an
// embedded resource with a blob, which Caplo takes out of the result and offers the customer as a file.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { context } from "@caplo/tools";
import { z } from "zod";
import { shopHeaders, shopUrl } from "./shop.ts";

type Invoice = { invoiceId: string; orderId: string; customerName: string; issuedAt: string; subtotal: number; tax: number; total: number; currency: string; status: string };

export function createServer() {
  const server = new McpServer({ name: "invoices", version: "1.0.0" }, { capabilities: { tools: {}, logging: {} } });

  server.registerTool(
    "get_invoice",
    {
      description: "Get the invoice of an order, for example SO-1004, as a PDF the customer can download, with its totals.",
      inputSchema: z.strictObject({ orderId: z.string().regex(/^SO-[0-9]{4}$/).describe("Order number") }),
      outputSchema: {
        invoice: z.object({
          invoiceId: z.string(),
          orderId: z.string(),
          customerName: z.string(),
          issuedAt: z.iso.datetime(),
          status: z.enum(["paid", "void"]),
          subtotal: z.number(),
          tax: z.number(),
          total: z.number(),
          currency: z.string(),
        }),
      },
    },
    async ({ orderId }, extra) => {
      const { secrets, signal, log } = context(extra);
      const invoiceId = orderId.replace(/^SO-/, "INV-");
      const summary = await fetch(shopUrl(secrets, `/invoices/${invoiceId}`), { headers: shopHeaders(secrets), signal });
      if (summary.status === 404) return { isError: true, content: [{ type: "text", text: `There is no invoice for order ${orderId}.` }] };
      if (!summary.ok) throw new Error(`invoice lookup failed with ${summary.status}`);
      const body = (await summary.json()) as Invoice;
      const pdf = await fetch(shopUrl(secrets, `/invoices/${invoiceId}.pdf`), { headers: shopHeaders(secrets, { accept: "application/pdf" }), signal });
      if (!pdf.ok) throw new Error(`invoice PDF failed with ${pdf.status}`);
      const bytes = Buffer.from(await pdf.arrayBuffer());
      log.info("invoice fetched", { invoiceId, bytes: bytes.length });
      const invoice = {
        invoiceId: body.invoiceId,
        orderId: body.orderId,
        customerName: body.customerName,
        issuedAt: body.issuedAt,
        status: body.status as "paid" | "void",
        subtotal: body.subtotal,
        tax: body.tax,
        total: body.total,
        currency: body.currency,
      };
      return {
        content: [
          { type: "text", text: JSON.stringify({ invoice }) },
          { type: "resource", resource: { uri: `https://shop.caplo.test/invoices/${invoiceId}.pdf`, mimeType: "application/pdf", blob: bytes.toString("base64") } },
        ],
        structuredContent: { invoice },
      };
    },
  );
  return server;
}
