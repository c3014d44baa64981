import { afterEach, describe, expect, it } from "vitest";
import { describeModelConfig, modelFromEnv, readModelConfig } from "./config.ts";
import { chunk, startFakeOpenAI, writeSse, type FakeOpenAI } from "./openai.fake.ts";

const KEY = "sk-config-test-abcdefghijklmnop";
let fake: FakeOpenAI | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

describe("choosing a model from the environment", () => {
  it("returns no model when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set (the caller uses the scripted model)", () => {
    expect(modelFromEnv({})).toBeUndefined();
    expect(modelFromEnv({ CAPLO_MODEL: "gpt-4.1", OPENAI_API_KEY: "  " })).toBeUndefined();
  });

  it("uses OpenAI with the key and gpt-4.1-mini by default, or CAPLO_MODEL", () => {
    expect(readModelConfig({ OPENAI_API_KEY: KEY })).toEqual({
      ok: true,
      config: { provider: "openai", options: { model: "gpt-4.1-mini", baseUrl: "https://api.openai.com/v1", apiKey: KEY } },
    });
    expect(modelFromEnv({ OPENAI_API_KEY: KEY, CAPLO_MODEL: "gpt-4.1" })?.id).toBe("openai:gpt-4.1");
  });

  it("uses a local OpenAI-compatible server without a key, and needs CAPLO_MODEL for it", () => {
    expect(modelFromEnv({ OPENAI_BASE_URL: "http://127.0.0.1:11434/v1", CAPLO_MODEL: "llama3.1:8b" })?.id).toBe("openai:llama3.1:8b");
    expect(readModelConfig({ OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" })).toMatchObject({ ok: false, error: { code: "model_name_required", path: "CAPLO_MODEL" } });
    expect(() => modelFromEnv({ OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" })).toThrow(expect.objectContaining({ code: "model_name_required" }));
  });

  it("refuses a base URL that is not http(s), or carries credentials or a query", () => {
    for (const url of ["not a url", "ftp://models.example/v1", "https://user:pass@models.example/v1", "https://models.example/v1?key=1"]) {
      expect(readModelConfig({ OPENAI_BASE_URL: url, CAPLO_MODEL: "m" }), url).toMatchObject({ ok: false, error: { code: "model_base_url_invalid" } });
    }
  });

  it("refuses to send the key over plain http to another machine, and allows it to loopback", () => {
    expect(readModelConfig({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: "http://10.0.0.5:8000/v1", CAPLO_MODEL: "m" })).toMatchObject({
      ok: false,
      error: { code: "model_base_url_insecure" },
    });
    expect(readModelConfig({ OPENAI_BASE_URL: "http://10.0.0.5:8000/v1", CAPLO_MODEL: "m" }).ok).toBe(true);
    expect(readModelConfig({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: "http://localhost:8000/v1", CAPLO_MODEL: "m" }).ok).toBe(true);
  });

  it("refuses a model name with spaces or over 200 characters", () => {
    expect(readModelConfig({ OPENAI_API_KEY: KEY, CAPLO_MODEL: "gpt 4" })).toMatchObject({ ok: false, error: { code: "model_name_invalid" } });
    expect(readModelConfig({ OPENAI_API_KEY: KEY, CAPLO_MODEL: "m".repeat(200) }).ok).toBe(true);
    expect(readModelConfig({ OPENAI_API_KEY: KEY, CAPLO_MODEL: "m".repeat(201) }).ok).toBe(false);
  });

  it("applies an agent's provider/model override", () => {
    expect(modelFromEnv({ OPENAI_API_KEY: KEY, CAPLO_MODEL: "gpt-4.1-mini" }, "openai/gpt-4.1")?.id).toBe("openai:gpt-4.1");
    expect(modelFromEnv({ OPENAI_API_KEY: KEY }, "scripted/demo")).toBeUndefined();
    expect(readModelConfig({}, "openai/gpt-4.1")).toMatchObject({ ok: false, error: { code: "model_provider_unavailable", path: "model" } });
    expect(readModelConfig({ OPENAI_API_KEY: KEY }, "gpt-4.1")).toMatchObject({ ok: false, error: { code: "model_name_invalid" } });
  });

  it("never puts the key in an error or the startup description", () => {
    const env = { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: "http://10.0.0.5/v1", CAPLO_MODEL: "m" };
    expect(JSON.stringify(readModelConfig(env))).not.toContain(KEY);
    expect(() => modelFromEnv(env)).toThrow();
    try {
      modelFromEnv(env);
    } catch (error) {
      expect(String(error)).not.toContain(KEY);
      expect(JSON.stringify(error)).not.toContain(KEY);
    }
    const description = describeModelConfig({ OPENAI_API_KEY: KEY });
    expect(description).toBe("model: openai:gpt-4.1-mini at https://api.openai.com/v1 (API key set)");
    expect(describeModelConfig({})).toMatch(/^model: scripted/);
  });

  it("builds a provider that talks to the configured server with the configured key and model", async () => {
    fake = await startFakeOpenAI({ model: "llama3.1:8b", apiKey: KEY }, (_req, res) => writeSse(res, [chunk.text("hello"), chunk.finish("stop")]));
    const model = modelFromEnv({ OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.baseUrl, CAPLO_MODEL: "llama3.1:8b" });
    const parts = [];
    for await (const part of model!.stream({ messages: [{ role: "user", content: "hi" }], tools: [] })) parts.push(part);
    expect(fake.problems).toEqual([]);
    expect(parts).toEqual([{ type: "text-delta", text: "hello" }, { type: "finish", reason: "stop" }]);
  });
});
