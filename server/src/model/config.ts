// Which model the server uses, chosen from the environment: the OpenAI-compatible provider when
// OPENAI_API_KEY or OPENAI_BASE_URL is set, otherwise none (the caller falls back to the scripted model).
//   OPENAI_API_KEY   sent as a bearer token; never logged, never in an error
//   OPENAI_BASE_URL  an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (Ollama); default OpenAI
//   CAPLO_MODEL      the model name; needed with OPENAI_BASE_URL, default gpt-4.1-mini for OpenAI itself
import { MODEL_REF_PATTERN } from "@caplo/shared";
import type { Model } from "./model.ts";
import { createOpenAIModel, OPENAI_DEFAULT_BASE_URL, type OpenAIOptions } from "./openai.ts";

export const DEFAULT_OPENAI_MODEL = "gpt-4.1-mini";

export type ModelConfigErrorCode = "model_base_url_invalid" | "model_base_url_insecure" | "model_name_required" | "model_name_invalid" | "model_provider_unavailable";

/** A configuration that cannot work: the server should refuse to start rather than guess. */
export class ModelConfigError extends Error {
  readonly code: ModelConfigErrorCode;
  readonly path: string;
  constructor(code: ModelConfigErrorCode, path: string, message: string) {
    super(message);
    this.name = "ModelConfigError";
    this.code = code;
    this.path = path;
  }
}

type Env = Record<string, string | undefined>;
export type ModelConfig = { provider: "openai"; options: OpenAIOptions } | { provider: "scripted" };
export type ModelConfigResult = { ok: true; config: ModelConfig } | { ok: false; error: { code: ModelConfigErrorCode; path: string; message: string } };

const MODEL_NAME_PATTERN = /^[\x21-\x7E]{1,200}$/;
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * Read the model settings from the environment. `override` is an agent's `model:` (provider/model):
 * openai/<name> uses the environment's server and key with that model name; scripted/<name> asks for
 * the scripted model.
 */
export function readModelConfig(env: Env, override?: string): ModelConfigResult {
  const apiKey = nonEmpty(env.OPENAI_API_KEY);
  const baseUrl = nonEmpty(env.OPENAI_BASE_URL);
  let name = nonEmpty(env.CAPLO_MODEL);
  if (override !== undefined) {
    const match = MODEL_REF_PATTERN.exec(override);
    if (!match) return fail("model_name_invalid", "model", `${JSON.stringify(override)} is not provider/model`);
    if (match[1] === "scripted") return { ok: true, config: { provider: "scripted" } };
    if (apiKey === undefined && baseUrl === undefined) {
      return fail("model_provider_unavailable", "model", `the agent asks for ${override}, but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set`);
    }
    name = match[2];
  }
  if (apiKey === undefined && baseUrl === undefined) return { ok: true, config: { provider: "scripted" } };

  if (baseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      return fail("model_base_url_invalid", "OPENAI_BASE_URL", "OPENAI_BASE_URL is not a URL (for example http://127.0.0.1:11434/v1)");
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") return fail("model_base_url_invalid", "OPENAI_BASE_URL", "OPENAI_BASE_URL must be http or https");
    if (url.username || url.password || url.search || url.hash) {
      return fail("model_base_url_invalid", "OPENAI_BASE_URL", "OPENAI_BASE_URL must not carry credentials, a query or a fragment");
    }
    // A key sent in clear text across a network can be read by anyone on the way.
    if (url.protocol === "http:" && apiKey !== undefined && !LOOPBACK_HOSTS.has(url.hostname)) {
      return fail("model_base_url_insecure", "OPENAI_BASE_URL", "OPENAI_API_KEY would be sent over plain http to a host that is not this machine: use https");
    }
    if (name === undefined) return fail("model_name_required", "CAPLO_MODEL", "set CAPLO_MODEL to the model the server at OPENAI_BASE_URL serves (for example llama3.1:8b)");
  }
  name ??= DEFAULT_OPENAI_MODEL;
  if (!MODEL_NAME_PATTERN.test(name)) return fail("model_name_invalid", "CAPLO_MODEL", "CAPLO_MODEL must be 1 to 200 printable characters without spaces");
  return {
    ok: true,
    config: { provider: "openai", options: { model: name, baseUrl: baseUrl ?? OPENAI_DEFAULT_BASE_URL, ...(apiKey !== undefined && { apiKey }) } },
  };
}

/**
 * The OpenAI-compatible provider when the environment configures one, otherwise undefined (use the
 * scripted model). A configuration that cannot work throws ModelConfigError, at startup.
 */
export function modelFromEnv(env: Env = process.env, override?: string): Model | undefined {
  const result = readModelConfig(env, override);
  if (!result.ok) throw new ModelConfigError(result.error.code, result.error.path, result.error.message);
  return result.config.provider === "openai" ? createOpenAIModel(result.config.options) : undefined;
}

/** What the configuration is, for a startup log line: never the key. */
export function describeModelConfig(env: Env = process.env): string {
  const result = readModelConfig(env);
  if (!result.ok) return `model: misconfigured (${result.error.code})`;
  if (result.config.provider === "scripted") return "model: scripted (set OPENAI_API_KEY or OPENAI_BASE_URL for a real one)";
  const { model, baseUrl, apiKey } = result.config.options;
  return `model: openai:${model} at ${baseUrl}${apiKey ? " (API key set)" : ""}`;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

function fail(code: ModelConfigErrorCode, path: string, message: string): ModelConfigResult {
  return { ok: false, error: { code, path, message } };
}
