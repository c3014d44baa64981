// docs/agents.md and docs/identity.md say what is true: their agent.yaml example validates, and the
// Node signing code and openssl commands a site owner copies produce tokens and keys Caplo accepts.
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identitySchema } from "@caplo/shared";
import { parseAgentYaml } from "../../server/src/agents/index.ts";
import { createIdentityVerifier } from "../../server/src/identity/index.ts";

const DOCS = fileURLToPath(new URL("../../docs/", import.meta.url));
const NOW_S = () => Math.floor(Date.now() / 1000);
let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "caplo-identity-docs-"));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The fenced blocks of a markdown file whose info string starts with `info`. */
async function blocks(file: string, info: string): Promise<string[]> {
  const text = await readFile(join(DOCS, file), "utf8");
  const found: string[] = [];
  const pattern = new RegExp("^```" + info + "[^\\n]*\\n([\\s\\S]*?)^```", "gm");
  for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
}

type Signers = {
  signIdentityTokenHS256: (customer: Record<string, unknown>, secret: string) => string;
  signIdentityTokenES256: (customer: Record<string, unknown>, privateKey: string, kid?: string) => string;
};
async function signers(): Promise<Signers> {
  const [code] = await blocks("identity.md", "js identity-example");
  expect(code).toBeDefined();
  const file = join(work, "sign.mjs");
  await writeFile(file, code!);
  return (await import(pathToFileURL(file).href)) as Signers;
}

describe("docs/agents.md", () => {
  it("its full agent.yaml example is valid", async () => {
    const yaml = (await blocks("agents.md", "yaml")).find((block) => block.includes("kind: Agent"));
    expect(yaml).toBeDefined();
    const result = parseAgentYaml(yaml!);
    expect(result.ok ? [] : result.issues).toEqual([]);
  });
});

describe("docs/identity.md", () => {
  it("the Node HS256 example signs a token the agent's settings accept, with level, auth_time and ref", async () => {
    const { signIdentityTokenHS256 } = await signers();
    const secret = "k".repeat(48);
    const settings = identitySchema.parse({ algorithm: "HS256", secret: "WIDGET_IDENTITY_SECRET", issuer: "https://shop.example", audience: "caplo:shop-assistant" });
    const verifier = createIdentityVerifier(settings, (name) => (name === "WIDGET_IDENTITY_SECRET" ? secret : undefined));
    if (!verifier.ok) throw new Error(verifier.error.message);
    const signedInAt = NOW_S() - 60;
    const token = signIdentityTokenHS256({ id: "cust-42", signedInAt, usedTwoFactor: true, accountNumber: "ACC-7" }, secret);
    expect(verifier.verify(token)).toEqual({
      ok: true,
      subject: { id: "cust-42", level: "high", authTime: new Date(signedInAt * 1000).toISOString(), ref: "ACC-7" },
    });
  });

  it("the openssl commands make a key pair whose public key the agent accepts, and the ES256 example signs with it", async () => {
    const [commands] = await blocks("identity.md", "sh");
    const lines = commands!.trim().split("\n");
    expect(lines.every((line) => line.startsWith("openssl "))).toBe(true);
    for (const line of lines) execFileSync("openssl", line.split(" ").slice(1), { cwd: work, stdio: "pipe" });
    const publicKey = await readFile(join(work, "caplo-identity.pub"), "utf8");
    const privateKey = await readFile(join(work, "caplo-identity.key"), "utf8");
    const settings = identitySchema.parse({ algorithm: "ES256", publicKey, levels: { "urn:shop:mfa": "high" } });
    const verifier = createIdentityVerifier(settings, () => undefined);
    if (!verifier.ok) throw new Error(verifier.error.message);
    const { signIdentityTokenES256 } = await signers();
    const token = signIdentityTokenES256({ id: "cust-9", signedInAt: NOW_S(), acr: "urn:shop:mfa" }, privateKey);
    expect(verifier.verify(token)).toMatchObject({ ok: true, subject: { id: "cust-9", level: "high" } });
  });
});
