// Publishing end to end: `caplo agent publish` builds real tool packages (the seeds' examples, on
// Node 24), pins their exact versions in a release stored on disk, and a changed package reaches
// customers only through a new release.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { releaseSchema } from "@caplo/shared";
import { FileReleaseStore } from "../../server/src/agents/index.ts";
import { runInit, runPublish, runValidate } from "../../server/src/cli/agent.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const NOW = new Date("2026-03-01T12:00:00Z");
let work: string;
/** The store publishing records its audit in: one beside the test's releases (never the repository's .caplo). */
const env = () => ({ CAPLO_DB: join(work, "caplo.db") });

const AGENT = `apiVersion: v1
kind: Agent
name: shop-assistant
instructions: You help customers of the shop with their orders.
tools:
  - order-lookup/get_order
  - cancel-order/cancel_order
origins:
  - https://shop.example
channels:
  web: {}
  whatsapp:
    handoff:
      queue: support
`;

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) }, out, err };
}

beforeAll(async () => {
  // Inside the repository (tests/artifacts is ignored by git) so the copied packages resolve @caplo/tools.
  await mkdir(join(ROOT, "tests/artifacts"), { recursive: true });
  work = await mkdtemp(join(ROOT, "tests/artifacts/agents-"));
  await cp(join(ROOT, "examples/seed/order-lookup"), join(work, "order-lookup"), { recursive: true });
  await cp(join(ROOT, "examples/seed/cancel-order"), join(work, "cancel-order"), { recursive: true });
  await writeFile(join(work, "agent.yaml"), AGENT);
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe("caplo agent publish", () => {
  it("builds the packages, pins their versions and keeps a new package version away from customers until the next release", async () => {
    const store = join(work, "releases");
    const args = [join(work, "agent.yaml"), "--packages", join(work, "order-lookup"), join(work, "cancel-order"), "--store", store];

    const first = capture();
    expect(await runPublish([...args, "--json"], first.io, env(), NOW)).toBe(0);
    expect(first.err).toEqual([]);
    const r1 = releaseSchema.parse(JSON.parse(first.out.join("\n")));
    expect(r1.tools.map((tool) => [tool.modelName, tool.policy.effect])).toEqual([
      ["order_lookup__get_order", "read"],
      ["cancel_order__cancel_order", "write"],
    ]);
    expect(r1.tools[1]!.policy).toMatchObject({ confirmation: "required", timeoutSeconds: 15 });
    expect(r1.packages.map((version) => version.name)).toEqual(["cancel-order", "order-lookup"]);
    const files = new FileReleaseStore(store);
    expect((await files.latest("shop-assistant"))?.id).toBe(r1.id);

    // Built versions recorded as JSON (what caplo tool build prints) serve as --packages too.
    for (const version of r1.packages) await writeFile(join(work, `${version.name}.json`), JSON.stringify(version));

    // The same agent and unchanged packages: the same release, nothing new.
    const again = capture();
    const recorded = [join(work, "agent.yaml"), "--packages", join(work, "order-lookup.json"), join(work, "cancel-order.json"), "--store", store];
    expect(await runPublish(recorded, again.io, env(), new Date("2026-03-02T00:00:00Z"))).toBe(0);
    expect(again.out[0]!.split("\n")[0]).toBe(`Unchanged (already published; now the latest) ${r1.id}`);
    const againJson = capture();
    expect(await runPublish([...recorded, "--json"], againJson.io, env(), new Date("2026-03-03T00:00:00Z"))).toBe(0);
    expect(JSON.parse(againJson.out.join("\n"))).toEqual(r1);

    // A changed package is a new version, but the latest release still pins the old one.
    const toolFile = join(work, "order-lookup/src/tool.ts");
    await writeFile(toolFile, (await readFile(toolFile, "utf8")).replace("Look up an order by its number", "Find an order by its number"));
    expect((await files.latest("shop-assistant"))?.tools[0]?.description).toMatch(/^Look up an order/);

    const second = capture();
    const changed = [join(work, "agent.yaml"), "--packages", join(work, "order-lookup"), join(work, "cancel-order.json"), "--store", store, "--json"];
    expect(await runPublish(changed, second.io, env(), NOW)).toBe(0);
    const r2 = releaseSchema.parse(JSON.parse(second.out.join("\n")));
    expect(r2.id).not.toBe(r1.id);
    expect(r2.tools[0]!.packageVersionId).not.toBe(r1.tools[0]!.packageVersionId);
    expect(r2.tools[1]!.packageVersionId).toBe(r1.tools[1]!.packageVersionId);
    expect(r2.tools[0]!.description).toMatch(/^Find an order/);
    expect((await files.latest("shop-assistant"))?.id).toBe(r2.id);
    // The earlier release is still there, unchanged, for conversations that started on it.
    expect(await files.get(r1.id)).toEqual(r1);
  });

  it("refuses a tool the built package does not have, naming the file, line and code", async () => {
    const file = join(work, "typo.yaml");
    await writeFile(file, AGENT.replace("cancel-order/cancel_order", "cancel-order/cancel"));
    const run = capture();
    expect(await runPublish([file, "--packages", join(work, "cancel-order.json"), join(work, "order-lookup.json"), "--store", join(work, "none")], run.io, env(), NOW)).toBe(1);
    expect(run.err).toEqual([`${file}:7: tools[1]: ${"cancel-order@sha256:"}${run.err[0]!.split("cancel-order@sha256:")[1]!.split(" ")[0]} has no tool cancel (its tools: cancel_order) [tool_unknown]`]);
    expect(run.out).toEqual([]);
  });

  it("refuses an unknown package and stores nothing", async () => {
    const store = join(work, "unknown-store");
    const run = capture();
    expect(await runPublish([join(work, "agent.yaml"), "--packages", join(work, "order-lookup.json"), "--store", store], run.io, env(), NOW)).toBe(1);
    expect(run.err[0]).toMatch(/tools\[1\]: no built version of package cancel-order was given \(packages given: order-lookup\) \[package_unknown\]$/);
    expect(await new FileReleaseStore(store).latest("shop-assistant")).toBeUndefined();
  });

  it("reports a package that does not build with the build's own error, and an unreadable version file", async () => {
    const run = capture();
    expect(await runPublish([join(work, "agent.yaml"), "--packages", join(work, "missing-package")], run.io, env(), NOW)).toBe(1);
    expect(run.err[0]).toMatch(/missing-package: .*is not a folder \[manifest_invalid\]$/);
    const json = capture();
    expect(await runPublish([join(work, "agent.yaml"), "--packages", join(work, "nothing.json")], json.io, env(), NOW)).toBe(1);
    expect(json.err[0]).toMatch(/nothing\.json: cannot read a built version from it: .* \[package_version_unreadable\]$/);
  });

  it("answers usage errors with exit code 2", async () => {
    for (const args of [[], ["a.yaml", "b.yaml"], ["a.yaml", "--packages"], ["a.yaml", "--store"], ["a.yaml", "--force"]]) {
      const run = capture();
      expect(await runPublish(args, run.io, env(), NOW), args.join(" ")).toBe(2);
    }
  });
});

describe("caplo agent validate", () => {
  it("prints a summary for a valid file and exits 0", async () => {
    const run = capture();
    expect(await runValidate([join(work, "agent.yaml")], run.io)).toBe(0);
    expect(run.out).toEqual([`${join(work, "agent.yaml")}: valid agent shop-assistant: 2 tools, channels web, whatsapp`]);
  });

  it("prints every problem as FILE:LINE: PATH: MESSAGE [CODE] and exits 1", async () => {
    const file = join(work, "bad.yaml");
    await writeFile(file, AGENT.replace("https://shop.example", "http://shop.example").replace("queue: support", "queue: Support"));
    const run = capture();
    expect(await runValidate([file], run.io)).toBe(1);
    expect(run.err).toEqual([
      `${file}:9: origins[0]: an origin such as https://shop.example (https; http only for localhost), no path or trailing slash [pattern_mismatch]`,
      `${file}:14: channels.whatsapp.handoff.queue: lowercase letters, digits and dashes, starting with a letter, at most 40 characters [pattern_mismatch]`,
    ]);
  });
});

describe("caplo agent init", () => {
  it("writes a starter agent.yaml that validates, and never overwrites one without --force", async () => {
    const file = join(work, "starter.yaml");
    const run = capture();
    expect(await runInit(["helper", "--tools", "order-lookup/get_order", "--origin", "https://shop.example", "--file", file], run.io)).toBe(0);
    expect(await runValidate([file], capture().io)).toBe(0);
    expect(await readFile(file, "utf8")).toContain("  - order-lookup/get_order\n");
    const twice = capture();
    expect(await runInit(["helper", "--file", file], twice.io)).toBe(1);
    expect(twice.err).toEqual([`${file} already exists: use --force to overwrite it`]);
    expect(await runInit(["helper", "--file", file, "--force"], capture().io)).toBe(0);
  });

  it("refuses a bad name or tool with exit code 2, and a bad origin without writing anything", async () => {
    expect(await runInit(["Helper", "--file", join(work, "x.yaml")], capture().io)).toBe(2);
    expect(await runInit(["helper", "--tools", "orders", "--file", join(work, "x.yaml")], capture().io)).toBe(2);
    const run = capture();
    const file = join(work, "insecure.yaml");
    expect(await runInit(["helper", "--origin", "http://shop.example", "--file", file], run.io)).toBe(1);
    expect(run.err[0]).toMatch(/origins\[0\]: .* \[pattern_mismatch\]$/);
    await expect(readFile(file)).rejects.toMatchObject({ code: "ENOENT" });
  });
});
