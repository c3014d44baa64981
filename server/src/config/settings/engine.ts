// Settings of the engine: status checks, proposals' lifetime, what the model is sent, how long delivered
// files are kept, and where handoff notices go. The ranges are defined here once; the engine imports them.
import { setting, text, wholeNumber } from "../setting.ts";

export const STATUS_CHECK_BASE_MIN_MS = 100;
export const STATUS_CHECK_BASE_MAX_MS = 3_600_000;
export const PROPOSAL_TTL_DEFAULT_SECONDS = 3600;
export const PROPOSAL_TTL_MIN_SECONDS = 60;
export const PROPOSAL_TTL_MAX_SECONDS = 86_400;
/**
 * The default budget: 48,000 characters of transcript, about 12,000 tokens of English text at roughly
 * four characters a token. With the instructions (at most 32,000 characters) and the tool definitions
 * this fits comfortably in a 32k-token context, and leaves room for the answer.
 */
export const TRANSCRIPT_BUDGET_DEFAULT_CHARS = 48_000;
/** The smallest budget accepted: room for a few turns and a clipped tool result. */
export const TRANSCRIPT_BUDGET_MIN_CHARS = 2_000;
export const TRANSCRIPT_BUDGET_MAX_CHARS = 2_000_000;
/** Delivered files are kept 30 days by default: long enough to download again after a while, short enough not to hoard customers' documents. */
export const FILE_RETENTION_DEFAULT_DAYS = 30;
export const FILE_RETENTION_MIN_DAYS = 1;
export const FILE_RETENTION_MAX_DAYS = 3650;
/** The handoff webhook's shared secret is at least this long (HMAC-SHA256 keys should carry 256 bits). */
export const HANDOFF_SECRET_MIN = 32;

const handoff = "engine/handoff.ts (handoff_webhook_invalid, handoff_secret_invalid, handoff_webhook_missing)";

export const engineSettings = {
  CAPLO_STATUS_CHECK_BASE_MS: setting(
    {
      name: "CAPLO_STATUS_CHECK_BASE_MS",
      code: "status_check_base_invalid",
      flag: "--status-check-ms N (demo)",
      rule: `a whole number of milliseconds from ${STATUS_CHECK_BASE_MIN_MS} to ${STATUS_CHECK_BASE_MAX_MS}`,
      example: "5000",
      default: "5000 (serve), 4000 (demo)",
      commands: ["serve", "demo"],
      doc: "the gap before a write's first status check; each next gap doubles",
    },
    wholeNumber(STATUS_CHECK_BASE_MIN_MS, STATUS_CHECK_BASE_MAX_MS).optional(),
  ),
  CAPLO_PROPOSAL_TTL_SECONDS: setting(
    {
      name: "CAPLO_PROPOSAL_TTL_SECONDS",
      code: "proposal_ttl_invalid",
      rule: `a whole number of seconds from ${PROPOSAL_TTL_MIN_SECONDS} to ${PROPOSAL_TTL_MAX_SECONDS}`,
      example: "3600",
      default: String(PROPOSAL_TTL_DEFAULT_SECONDS),
      commands: ["serve", "demo"],
      doc: "how long a proposed write (a review card) waits for the customer's decision. The seeds set no lifetime; a background sweep, on one node per proposal, then marks it expired and the card says so. Nothing runs",
    },
    wholeNumber(PROPOSAL_TTL_MIN_SECONDS, PROPOSAL_TTL_MAX_SECONDS).default(PROPOSAL_TTL_DEFAULT_SECONDS),
  ),
  CAPLO_TRANSCRIPT_BUDGET_CHARS: setting(
    {
      name: "CAPLO_TRANSCRIPT_BUDGET_CHARS",
      code: "transcript_budget_invalid",
      rule: `a whole number of characters from ${TRANSCRIPT_BUDGET_MIN_CHARS} to ${TRANSCRIPT_BUDGET_MAX_CHARS}`,
      example: "48000",
      default: `${TRANSCRIPT_BUDGET_DEFAULT_CHARS} (about 12,000 tokens)`,
      commands: ["serve", "demo"],
      doc: "how many characters of the conversation the model is sent per step at most. The agent's instructions always go in full, then the most recent turns that fit, a tool call always with its results; when older turns are left out the model is told so. The stored conversation is never cut. Size it to your model's context window, at about 4 characters a token",
    },
    wholeNumber(TRANSCRIPT_BUDGET_MIN_CHARS, TRANSCRIPT_BUDGET_MAX_CHARS).default(TRANSCRIPT_BUDGET_DEFAULT_CHARS),
  ),
  CAPLO_FILE_RETENTION_DAYS: setting(
    {
      name: "CAPLO_FILE_RETENTION_DAYS",
      code: "file_retention_invalid",
      bareMessage: true,
      rule: `a whole number of days from ${FILE_RETENTION_MIN_DAYS} to ${FILE_RETENTION_MAX_DAYS}`,
      example: "30",
      default: String(FILE_RETENTION_DEFAULT_DAYS),
      commands: ["serve", "demo"],
      doc: "how many days the bytes of a file delivered to a customer are kept. The purge runs at start and hourly; afterwards the conversation still shows the file, and its download answers 410 with `file_expired`",
    },
    wholeNumber(FILE_RETENTION_MIN_DAYS, FILE_RETENTION_MAX_DAYS).default(FILE_RETENTION_DEFAULT_DAYS),
  ),
  CAPLO_HANDOFF_WEBHOOK_URL: setting(
    {
      name: "CAPLO_HANDOFF_WEBHOOK_URL",
      checkedBy: handoff,
      rule: "an https URL, or http only to this machine, without user or password",
      example: "https://team.example/caplo-handoff",
      default: "— (no notices)",
      commands: ["serve"],
      doc: "where handoff notices of every queue go, signed with `CAPLO_HANDOFF_WEBHOOK_SECRET`. See [Team API and handoff](team-api.md#handoff-notices)",
    },
    text().optional(),
  ),
  CAPLO_HANDOFF_WEBHOOK_URL_: setting(
    {
      name: "CAPLO_HANDOFF_WEBHOOK_URL_<QUEUE>",
      family: "CAPLO_HANDOFF_WEBHOOK_URL_",
      checkedBy: handoff,
      rule: "an https URL, or http only to this machine; QUEUE is the queue's name upper-cased, dashes as underscores",
      example: "https://team.example/vip",
      default: "`CAPLO_HANDOFF_WEBHOOK_URL`",
      commands: ["serve"],
      doc: "where one queue's handoff notices go instead",
    },
    text().optional(),
  ),
  CAPLO_HANDOFF_WEBHOOK_SECRET: setting(
    {
      name: "CAPLO_HANDOFF_WEBHOOK_SECRET",
      checkedBy: handoff,
      rule: `at least ${HANDOFF_SECRET_MIN} characters`,
      example: "a 32-character or longer random string",
      default: "required with a webhook URL",
      commands: ["serve"],
      doc: "the secret handoff notices are signed with (HMAC-SHA256 in `x-caplo-signature`)",
    },
    text().optional(),
  ),
};
