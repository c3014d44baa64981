// help_article: the help centre article that best matches a question, as a page the visitor opens
// over the chat. The page only informs; it never decides an outcome.
import { defineTool } from "@caplo/tools";
import { shopHeaders, shopUrl } from "./shop.ts";

type Article = { topic: string; title: string; summary: string; url: string };
type Input = { question: string };
type Output = { found: boolean; article?: Article };

export default defineTool<Input, Output>({
  name: "help_article",
  description: "Find the help centre article about returns, delivery or cancellations that answers the customer's question.",
  inputSchema: {
    type: "object",
    properties: { question: { type: "string", minLength: 1, maxLength: 200, description: "The customer's question or its key words" } },
    required: ["question"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      found: { type: "boolean" },
      article: {
        type: "object",
        properties: { topic: { type: "string" }, title: { type: "string" }, summary: { type: "string" }, url: { type: "string", format: "uri" } },
        required: ["topic", "title", "summary", "url"],
      },
    },
    required: ["found"],
  },
  async handler({ question }, { secrets, signal, log }) {
    const response = await fetch(shopUrl(secrets, `/help-articles?${new URLSearchParams({ q: question })}`), { headers: shopHeaders(secrets), signal });
    if (!response.ok) throw new Error(`help search failed with ${response.status}`);
    const body = (await response.json()) as { articles: Article[] };
    const first = body.articles[0];
    log.info("help searched", { matches: body.articles.length });
    if (!first) return { found: false };
    return { found: true, article: { topic: first.topic, title: first.title, summary: first.summary, url: first.url } };
  },
});
