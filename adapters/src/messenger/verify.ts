// Verifies a Messenger webhook: Meta's X-Hub-Signature-256 over the raw body, and the hub.challenge handshake.
export { verifyMeta as verifyMessenger, handshakeMeta as handshakeMessenger, type MetaVerifyConfig } from "../meta/verify.ts";
