import { describe, expect, it } from "vitest";
import { agentConfigSchema, type AgentConfigInput } from "@caplo/shared";
import { accountV1, builtVersion, ordersV1, ordersV2 } from "./__fixtures__/versions.ts";
import { canonicalJson, createRelease, verifyRelease } from "./release.ts";

const NOW = new Date("2026-03-01T12:00:00Z");
const agent = (overrides: Partial<AgentConfigInput> = {}) =>
  agentConfigSchema.parse({
    apiVersion: "v1",
    kind: "Agent",
    name: "shop-assistant",
    instructions: "Help customers with their orders.",
    tools: ["orders/get_order", "orders/cancel_order"],
    origins: ["https://shop.example"],
    channels: { web: {} },
    ...overrides,
  });
const codes = (result: ReturnType<typeof createRelease>) => (result.ok ? [] : result.issues.map(({ code, path }) => `${code} ${path}`));

describe("publishing an agent release", () => {
  it("pins the exact package version and lists each tool under its model name with its policy", () => {
    const result = createRelease(agent(), [ordersV1, accountV1], NOW);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    const { release } = result;
    expect(release.id).toBe(`shop-assistant@sha256:${release.contentHash}`);
    expect(release.packages.map((version) => version.id)).toEqual([ordersV1.id]);
    expect(release.tools.map((tool) => [tool.ref, tool.modelName, tool.packageVersionId, tool.policy.effect])).toEqual([
      ["orders/get_order", "orders__get_order", ordersV1.id, "read"],
      ["orders/cancel_order", "orders__cancel_order", ordersV1.id, "write"],
    ]);
    expect(release.tools[1]).toMatchObject({ hasStatus: true, policy: { confirmation: "required", timeoutSeconds: 15 } });
    expect(release.publishedAt).toBe(NOW.toISOString());
    expect(verifyRelease(release)).toBe(true);
  });

  it("is immutable: the release object is frozen all the way down", () => {
    const result = createRelease(agent(), [ordersV1], NOW);
    if (!result.ok) throw new Error("expected a release");
    expect(Object.isFrozen(result.release)).toBe(true);
    expect(Object.isFrozen(result.release.tools[0]!.policy)).toBe(true);
    expect(() => {
      (result.release.tools as unknown as unknown[]).push({});
    }).toThrow();
  });

  it("gives the same content the same id, whenever it is published and wherever the version was built", () => {
    const first = createRelease(agent(), [ordersV1], NOW);
    const rebuilt = { ...ordersV1, dir: "/elsewhere", builtAt: "2027-01-01T00:00:00.000Z" };
    const second = createRelease(agent(), [rebuilt], new Date("2026-04-01T00:00:00Z"));
    expect(first.ok && second.ok && first.release.id === second.release.id).toBe(true);
  });

  it("gives a new package version a new release id: it reaches customers only through a new release", () => {
    const v1 = createRelease(agent(), [ordersV1], NOW);
    const v2 = createRelease(agent(), [ordersV2], NOW);
    if (!v1.ok || !v2.ok) throw new Error("expected releases");
    expect(v2.release.id).not.toBe(v1.release.id);
    expect(v1.release.tools[0]!.policy.timeoutSeconds).toBe(5);
    expect(v2.release.tools[0]!.policy.timeoutSeconds).toBe(8);
  });

  it("changes the id when any part of the agent config changes", () => {
    const base = createRelease(agent(), [ordersV1], NOW);
    const other = createRelease(agent({ greeting: "Hello!" }), [ordersV1], NOW);
    expect(base.ok && other.ok && base.release.id !== other.release.id).toBe(true);
  });

  it("refuses an unknown package, naming the packages it was given", () => {
    const result = createRelease(agent({ tools: ["orders/get_order", "returns/create_return"] }), [ordersV1], NOW);
    expect(codes(result)).toEqual(["package_unknown tools[1]"]);
    expect(!result.ok && result.issues[0]!.message).toContain("packages given: orders");
  });

  it("refuses a tool the package version does not have, naming the ones it has", () => {
    const result = createRelease(agent({ tools: ["orders/refund_order"] }), [ordersV1], NOW);
    expect(codes(result)).toEqual(["tool_unknown tools[0]"]);
    expect(!result.ok && result.issues[0]!.message).toContain("cancel_order, get_order");
  });

  it("refuses two different versions of one package", () => {
    expect(codes(createRelease(agent(), [ordersV1, ordersV2], NOW))).toEqual(["package_ambiguous packages[1]"]);
    expect(createRelease(agent(), [ordersV1, ordersV1], NOW).ok).toBe(true);
  });

  it("refuses something that is not a built package version", () => {
    expect(codes(createRelease(agent(), [{ name: "orders" }], NOW))).toEqual(["package_version_invalid packages[0]"]);
  });

  it("refuses a tool whose model name is over 64 characters, and accepts 64", () => {
    const pkg = `p${"a".repeat(39)}`;
    const version = builtVersion(pkg, [
      { name: "t".repeat(22), policy: { effect: "read", timeoutSeconds: 5 } },
      { name: "t".repeat(23), policy: { effect: "read", timeoutSeconds: 5 } },
    ]);
    expect(createRelease(agent({ tools: [`${pkg}/${"t".repeat(22)}`] }), [version], NOW).ok).toBe(true);
    // Built straight from a config that skipped the schema (as a hand-made release would), the release still refuses it.
    const config = { ...agent({ tools: [] }), tools: [`${pkg}/${"t".repeat(23)}`] };
    expect(codes(createRelease(config, [version], NOW))).toEqual(["tool_name_invalid tools[0]"]);
  });

  it("refuses tools of different packages that the model would see under one name", () => {
    const a = builtVersion("xa--b", [{ name: "c", policy: { effect: "read", timeoutSeconds: 5 } }]);
    const b = builtVersion("xa", [{ name: "b__c", policy: { effect: "read", timeoutSeconds: 5 } }]);
    const config = { ...agent({ tools: [] }), tools: ["xa--b/c", "xa/b__c"] };
    expect(codes(createRelease(config, [a, b], NOW))).toEqual(["tool_name_conflict tools[1]"]);
  });

  it("refuses a customer-aware tool when the agent cannot verify a customer, and accepts it with identity or a messaging channel", () => {
    const tools = ["account/get_profile"];
    expect(codes(createRelease(agent({ tools }), [accountV1], NOW))).toEqual(["identity_required identity"]);
    expect(createRelease(agent({ tools, identity: { algorithm: "HS256", secret: "WIDGET_SECRET" } }), [accountV1], NOW).ok).toBe(true);
    expect(createRelease(agent({ tools, channels: { web: {}, whatsapp: {} } }), [accountV1], NOW).ok).toBe(true);
  });

  it("pins only the packages its tools use", () => {
    const result = createRelease(agent({ tools: ["account/get_profile"], identity: { algorithm: "HS256", secret: "S" } }), [ordersV1, accountV1], NOW);
    expect(result.ok && result.release.packages.map((version) => version.name)).toEqual(["account"]);
  });

  it("detects a release altered after publishing", () => {
    const result = createRelease(agent(), [ordersV1], NOW);
    if (!result.ok) throw new Error("expected a release");
    const altered = JSON.parse(JSON.stringify(result.release));
    altered.tools[1].policy.confirmation = "none";
    expect(verifyRelease(altered)).toBe(false);
  });

  it("hashes canonical JSON: key order does not matter, array order does", () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(canonicalJson([2, 1])).toBe("[2,1]");
  });
});
