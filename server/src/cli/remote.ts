// `caplo remote`: connect a remote MCP server by URL, write its tools into a review file, merge later
// changes into that review, publish the reviewed tools as an immutable version, and check for drift.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { secretValues } from "../runner/fixtures.ts";
import {
  driftOf,
  formatReview,
  keepRemoteVersion,
  listRemote,
  mergeReview,
  newReview,
  parseReview,
  publishRemote,
  remoteVersionSchema,
  type RemoteEndpoint,
} from "../remote/index.ts";

export const help = `Usage:
  caplo remote list URL --name NAME [--auth-secret SECRET] [--out FILE]
      Connect (Streamable HTTP, then SSE) and write a review file (default NAME.review.yaml) with every
      tool unreviewed. Classify each as read or write with timeoutSeconds (and confirmation for writes).
  caplo remote review FILE
      List the server again and merge: new tools arrive unreviewed, changed tools go back to unreviewed.
  caplo remote publish FILE [--out DIR]
      Publish the reviewed tools as an immutable version (DIR default .caplo/remote), named by the
      content hash of the reviewed tools and schemas. Refused if a reviewed tool changed since review.
      An agent uses it by listing its tools (NAME/tool) and giving the version file to
      caplo agent publish --packages; calls go over the transport the tools were listed over.
  caplo remote check VERSION.json
      Report tools added, changed or removed on the server since the version; exit 1 on any drift.

The authorization header's value is the secret SECRET, from the environment or --secrets FILE
(default .caplo/secrets.env). --allow-private-network (operator, local development) allows http and
loopback or private addresses.`;

function option(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index === -1 ? undefined : args[index + 1];
}

const VALUED = ["--name", "--auth-secret", "--out", "--secrets"];

function endpointFor(url: string, secret: string | undefined, args: string[]): RemoteEndpoint | string {
  const endpoint: RemoteEndpoint = { url, ...(args.includes("--allow-private-network") && { allowPrivateNetwork: true }) };
  if (!secret) return endpoint;
  const { values, missing } = secretValues([secret], process.env, option(args, "--secrets") ?? join(".caplo", "secrets.env"));
  if (missing.length) return `secret_missing: ${secret} has no value: set it in the environment or the secrets file`;
  return { ...endpoint, authorization: values[secret]! };
}

async function listing(endpoint: RemoteEndpoint) {
  const listed = await listRemote(endpoint);
  if (!listed.ok) throw new Error(`${listed.error.code}: ${listed.error.message}`);
  return listed.listing;
}

export async function run(args: string[]): Promise<number> {
  const positional = args.filter((arg, index) => !arg.startsWith("--") && !VALUED.includes(args[index - 1] ?? ""));
  const [sub, target] = positional;
  try {
    if (sub === "list" && target) {
      const name = option(args, "--name");
      if (!name) {
        console.error("--name NAME is required (lowercase letters, digits and dashes)");
        return 2;
      }
      const secret = option(args, "--auth-secret");
      const endpoint = endpointFor(target, secret, args);
      if (typeof endpoint === "string") return (console.error(endpoint), 2);
      const listed = await listing(endpoint);
      const review = newReview(name, target, listed.tools, secret, listed.transport);
      const file = option(args, "--out") ?? `${name}.review.yaml`;
      writeFileSync(file, formatReview(review));
      console.log(`${listed.tools.length} tools listed over ${listed.transport}; review them in ${file}`);
      return 0;
    }
    if ((sub === "review" || sub === "publish") && target) {
      const parsed = parseReview(readFileSync(target, "utf8"));
      if (!parsed.ok) {
        for (const error of parsed.errors) console.error(`${error.code} ${error.path}: ${error.message}`);
        return 2;
      }
      const found = endpointFor(parsed.review.url, parsed.review.authorizationSecret, args);
      if (typeof found === "string") return (console.error(found), 2);
      // Listed again over the transport it was reviewed over (a review from before transports were recorded: either).
      const endpoint: RemoteEndpoint = { ...found, ...(parsed.review.transport && { transport: parsed.review.transport }) };
      const listed = await listing(endpoint);
      if (sub === "review") {
        const { review, changes } = mergeReview(parsed.review, listed.tools);
        writeFileSync(target, formatReview(review));
        for (const name of changes.added) console.log(`+ ${name}: new on the server, unreviewed`);
        for (const name of changes.changed) console.log(`~ ${name}: changed on the server, back to unreviewed`);
        for (const name of changes.removed) console.log(`- ${name}: no longer listed, removed from the review`);
        if (!changes.added.length && !changes.changed.length && !changes.removed.length) console.log("No changes on the server.");
        return 0;
      }
      const published = publishRemote(parsed.review, listed.tools, new Date(), listed.facts);
      if (!published.ok) {
        for (const error of published.errors) console.error(`${error.code} ${error.path}: ${error.message}`);
        return 1;
      }
      const file = keepRemoteVersion(option(args, "--out") ?? join(".caplo", "remote"), published.version);
      console.log(`published ${published.version.id} (${published.version.tools.length} tools) to ${file}`);
      if (published.skipped.length) console.log(`not published (unreviewed): ${published.skipped.join(", ")}`);
      return 0;
    }
    if (sub === "check" && target) {
      const version = remoteVersionSchema.parse(JSON.parse(readFileSync(target, "utf8")));
      const found = endpointFor(version.url, version.authorizationSecret, args);
      if (typeof found === "string") return (console.error(found), 2);
      const endpoint: RemoteEndpoint = { ...found, ...(version.transport && { transport: version.transport }) };
      const drift = driftOf(version, (await listing(endpoint)).tools);
      for (const name of drift.added) console.log(`+ ${name}: new on the server, not exposed until reviewed`);
      for (const name of drift.changed) console.log(`~ ${name}: changed on the server, not exposed until reviewed again`);
      for (const name of drift.removed) console.log(`- ${name}: no longer listed`);
      const any = drift.added.length + drift.changed.length + drift.removed.length > 0;
      if (!any) console.log(`${version.id}: no drift`);
      return any ? 1 : 0;
    }
  } catch (error) {
    console.error((error as Error).message);
    return 1;
  }
  console.error(help);
  return 2;
}
