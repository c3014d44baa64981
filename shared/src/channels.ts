// Platform limits of the messaging channels (WhatsApp over Twilio, Messenger, Instagram), defined once.
// The renderers keep every message inside these and the fake Twilio and Graph servers in tests refuse
// anything outside them, so a limit is enforced where it is rendered and proved where it is received.

/** WhatsApp reply buttons (twilio/quick-reply): at most 3, titles at most 20 characters and unique. */
export const WHATSAPP_BUTTONS_MAX = 3;
export const WHATSAPP_BUTTON_TITLE_MAX = 20;
/** WhatsApp list picker (twilio/list-picker): at most 10 items. */
export const WHATSAPP_LIST_ITEMS_MAX = 10;
export const WHATSAPP_LIST_ITEM_TITLE_MAX = 24;
export const WHATSAPP_LIST_ITEM_DESCRIPTION_MAX = 72;
export const WHATSAPP_LIST_ITEM_ID_MAX = 200;
/** The list picker's button text (the tap that opens the list). */
export const WHATSAPP_LIST_BUTTON_MAX = 20;
/** Body of an interactive (Content API) message. */
export const WHATSAPP_INTERACTIVE_BODY_MAX = 1024;
/**
 * A Content API variable's value (Twilio: "The variable value has a maximum length of 255 characters"); a
 * body, title, id or description sent as a variable is within it too.
 */
export const TWILIO_VARIABLE_VALUE_MAX = 255;
/** Body of a free-form text message sent with Body (Twilio's message body limit). */
export const WHATSAPP_TEXT_MAX = 1600;
/**
 * What Twilio sends as WhatsApp media, with its size limit in bytes: JPEG and PNG images up to 5 MB, PDF
 * documents up to 16 MB. Other files (GIF, WebP, which WhatsApp takes only as stickers) go as a link.
 */
export const WHATSAPP_MEDIA_MAX_BYTES: Readonly<Record<string, number>> = {
  "image/jpeg": 5 * 1024 * 1024,
  "image/png": 5 * 1024 * 1024,
  "application/pdf": 16 * 1024 * 1024,
};
/** Outside 24 hours after the customer's last message, no free-form message may be sent. */
export const WHATSAPP_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Twilio's error for a free-form message outside the 24-hour window. */
export const TWILIO_ERROR_OUTSIDE_WINDOW = 63016;

/** Messenger quick replies: at most 13, titles at most 20 characters, payload at most 1000. */
export const MESSENGER_QUICK_REPLIES_MAX = 13;
export const MESSENGER_QUICK_REPLY_TITLE_MAX = 20;
/** Messenger button template: text at most 640, 1 to 3 postback buttons, payload at most 1000. */
export const MESSENGER_BUTTON_TEXT_MAX = 640;
export const MESSENGER_BUTTONS_MIN = 1;
export const MESSENGER_BUTTONS_MAX = 3;
export const MESSENGER_BUTTON_TITLE_MAX = 20;
export const META_PAYLOAD_MAX = 1000;
/** Messenger text message: at most 2000 characters; longer text is split at the limit. */
export const MESSENGER_TEXT_MAX = 2000;
/** The standard messaging window of Messenger and Instagram; HUMAN_AGENT replies may follow for 7 days. */
export const META_WINDOW_MS = 24 * 60 * 60 * 1000;
export const META_HUMAN_AGENT_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/** Instagram quick replies: at most 13, titles at most 20 characters, text only. */
export const INSTAGRAM_QUICK_REPLIES_MAX = 13;
export const INSTAGRAM_QUICK_REPLY_TITLE_MAX = 20;
/** Instagram button template: text at most 640, 1 to 3 postback buttons. */
export const INSTAGRAM_BUTTON_TEXT_MAX = 640;
export const INSTAGRAM_BUTTONS_MAX = 3;
export const INSTAGRAM_BUTTON_TITLE_MAX = 20;
/** Instagram text message: at most 1000 bytes of UTF-8. */
export const INSTAGRAM_TEXT_BYTES_MAX = 1000;

/** The visible mark of a label shortened to fit a platform limit. */
export const ELLIPSIS = "…";

/**
 * The Meta webhook verify token (CAPLO_META_VERIFY_TOKEN): 16 to 128 characters, each a letter (A–Z, a–z), a
 * digit, or one of . _ ~ - (the characters that pass unchanged in the hub.verify_token query parameter).
 */
export const META_VERIFY_TOKEN_PATTERN = /^[A-Za-z0-9._~-]{16,128}$/;
export const META_VERIFY_TOKEN_RULE = "16 to 128 characters, each a letter (A-Z, a-z), a digit (0-9) or one of . _ ~ -";
