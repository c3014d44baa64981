// Verifies a Instagram webhook: Meta's X-Hub-Signature-256 over the raw body, and the hub.challenge handshake.
export { verifyMeta as verifyInstagram, handshakeMeta as handshakeInstagram, type MetaVerifyConfig } from "../meta/verify.ts";
