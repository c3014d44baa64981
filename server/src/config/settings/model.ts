// Settings of the model: an OpenAI or OpenAI-compatible server (Ollama, vLLM, llama.cpp); without one,
// the scripted model runs. model/config.ts checks them together (an agent's `model:` may override).
import { setting, text } from "../setting.ts";

const checkedBy = "model/config.ts (model_base_url_invalid, model_base_url_insecure, model_name_required, model_name_invalid)";

export const modelSettings = {
  OPENAI_API_KEY: setting(
    { name: "OPENAI_API_KEY", checkedBy, rule: "an API key", example: "sk-…", default: "—", commands: ["serve", "demo"], doc: "use OpenAI (sent as a bearer token; never logged, never in an error)" },
    text().optional(),
  ),
  OPENAI_BASE_URL: setting(
    { name: "OPENAI_BASE_URL", checkedBy, rule: "an http(s) URL of an OpenAI-compatible API (https off this machine with a key)", example: "http://127.0.0.1:11434/v1", default: "OpenAI's", commands: ["serve", "demo"], doc: "an OpenAI-compatible server (Ollama, vLLM, llama.cpp); needs `CAPLO_MODEL`" },
    text().optional(),
  ),
  CAPLO_MODEL: setting(
    { name: "CAPLO_MODEL", checkedBy, rule: "1 to 200 printable characters without spaces", example: "llama3.1:8b", default: "`gpt-4.1-mini` with OpenAI itself", commands: ["serve", "demo"], doc: "the model's name; required with `OPENAI_BASE_URL`" },
    text().optional(),
  ),
};
