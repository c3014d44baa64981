// Identity: who a customer is. Signed identity tokens from the site owner's backend (widget), channel
// identities (messaging apps), and step-up checks. The engine and gateway use what this file exports.
import type { IdentitySettings } from "@caplo/shared";
import { loadVerificationKeys, type IdentityKeyError, type SecretLookup } from "./keys.ts";
import { verifyIdentityToken, type IdentityResult } from "./identityToken.ts";

export { verifyIdentityToken, mintIdentityToken, type IdentityError, type IdentityErrorCode, type IdentityResult, type MintInput } from "./identityToken.ts";
export { loadVerificationKeys, loadPublicKeys, HS256_SECRET_MIN_BYTES, type IdentityKeyError, type SecretLookup, type VerificationKeys } from "./keys.ts";
export { satisfiesStepUp, stepUpShortfall, levelRank, type StepUpShortfall } from "./stepUp.ts";
export { channelSubject, type ChannelSubjectResult, type MessagingChannel } from "./channelSubject.ts";

export type IdentityVerifier = (token: string, now?: Date) => IdentityResult;

/** Load an agent's keys once and return a function that verifies tokens against them. */
export function createIdentityVerifier(
  settings: IdentitySettings,
  secrets: SecretLookup,
): { ok: true; verify: IdentityVerifier } | { ok: false; error: IdentityKeyError } {
  const loaded = loadVerificationKeys(settings, secrets);
  if (!loaded.ok) return loaded;
  return { ok: true, verify: (token, now = new Date()) => verifyIdentityToken(token, settings, loaded.keys, now) };
}
