// Which encoding of a static file to send, from the request's Accept-Encoding (RFC 9110 §12.5.3) and the
// encodings built beside the file (widget/dist/app.html.br, app.html.gz: precompressed at build).
// Pure: the header and the available encodings in, the choice out.

/** The encodings files may be precompressed in, best first (the server's preference on equal q), with their file suffix. */
export const ENCODINGS = [
  { name: "br", suffix: ".br" },
  { name: "gzip", suffix: ".gz" },
] as const;
export type Encoding = (typeof ENCODINGS)[number]["name"];

/** The coding to send: one of the available encodings, the file as it is (identity), or none acceptable. */
export type EncodingChoice = Encoding | "identity" | null;

/** Accept-Encoding as coding → q (lower-cased; `*` kept as is). A malformed q reads as 0, so it never widens what is accepted. */
export function parseAcceptEncoding(header: string): Map<string, number> {
  const accepted = new Map<string, number>();
  for (const part of header.split(",")) {
    const [coding, ...params] = part.split(";").map((s) => s.trim());
    if (!coding) continue;
    let q = 1;
    for (const param of params) {
      const [key, value] = param.split("=").map((s) => s.trim());
      if (key?.toLowerCase() !== "q") continue;
      q = value !== undefined && /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(value) ? Number(value) : 0;
    }
    // x-gzip is gzip's old name (RFC 9110 §8.4.1.3).
    const name = coding.toLowerCase() === "x-gzip" ? "gzip" : coding.toLowerCase();
    accepted.set(name, Math.max(q, accepted.get(name) ?? 0));
  }
  return accepted;
}

/**
 * The encoding to send. No header: identity (a client that says nothing may not understand any coding).
 * Otherwise the highest-q available coding, br before gzip on equal q; identity named at a higher q wins
 * over both. `q=0` refuses a coding, `*` stands for every coding not named. Identity not named is the
 * fallback when no coding is taken, unless `*;q=0` refuses it too; null when nothing is acceptable.
 */
export function chooseEncoding(header: string | undefined, available: readonly Encoding[]): EncodingChoice {
  if (header === undefined) return "identity";
  const accepted = parseAcceptEncoding(header);
  const star = accepted.get("*");
  let best: EncodingChoice = null;
  let bestQ = 0;
  for (const { name } of ENCODINGS) {
    const q = accepted.get(name) ?? star ?? 0;
    if (available.includes(name) && q > bestQ) [best, bestQ] = [name, q];
  }
  const identity = accepted.get("identity");
  if (identity !== undefined) return identity > bestQ ? "identity" : best;
  return best ?? (star === 0 ? null : "identity");
}
