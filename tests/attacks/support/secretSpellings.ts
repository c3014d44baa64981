// The secret the attack tests hand a package, and the ways careless code spells it (as the leaky package
// does: tests/attacks/packages/leaky): what must never be found in the model's text, a log or a file.

/** Characters that every encoding spells differently: / + = " and a space. */
export const SECRET = 'sk_live/Ab+cd=ef"gh 42xyZ';

/** Each spelling of `secret` the leaky package writes, as it appears in the package's text. */
export function secretSpellings(secret: string = SECRET): string[] {
  const bitsOf = (text: string) => Buffer.byteLength(text) * 8;
  const basic = Buffer.from(`shop-user:${secret}`).toString("base64");
  return [
    secret,
    encodeURIComponent(secret),
    new URLSearchParams({ key: secret }).toString().slice("key=".length),
    JSON.stringify(secret).slice(1, -1),
    Buffer.from(secret).toString("base64").replace(/=+$/, ""),
    // The part of a Basic header or a base64url state that only the secret's bytes decide.
    basic.slice(Math.ceil(bitsOf("shop-user:") / 6), Math.floor(bitsOf(`shop-user:${secret}`) / 6)),
    Buffer.from(`v1.${secret}`).toString("base64url").slice(4, Math.floor(bitsOf(`v1.${secret}`) / 6)),
  ];
}

/** The spellings of the secret found in `text`, also as JSON would escape each one. */
export function spellingsIn(text: string, secret: string = SECRET): string[] {
  return secretSpellings(secret).filter((spelling) => text.includes(spelling) || text.includes(JSON.stringify(spelling).slice(1, -1)));
}
