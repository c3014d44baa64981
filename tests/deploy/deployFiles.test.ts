// The deployment files (Dockerfile, deploy/compose.yaml, deploy/nginx.conf), checked without a Docker
// daemon (this machine has none, so the image is not built here): the Dockerfile runs `caplo serve` as a
// non-root user with its data in one volume and copies only files that exist; the compose file parses,
// names PostgreSQL, Redis, two nodes and one proxy port, gives every node the same store, bus and data
// volume, and every Caplo variable it sets passes the server's own configuration schema.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { readConfig } from "../../server/src/config/index.ts";
import { readWidgetSettings } from "../../server/src/gateway/settings.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");

/** The Dockerfile's instructions of the last stage (the image that runs), continuation lines joined. */
function finalStage(): Array<{ op: string; args: string }> {
  const lines = dockerfile.replace(/\\\n/g, " ").split("\n").map((line) => line.trim()).filter((line) => line && !line.startsWith("#"));
  const stages: Array<Array<{ op: string; args: string }>> = [];
  for (const line of lines) {
    const [op, ...rest] = line.split(/\s+/);
    if (op!.toUpperCase() === "FROM") stages.push([]);
    stages.at(-1)?.push({ op: op!.toUpperCase(), args: rest.join(" ") });
  }
  return stages.at(-1)!;
}

type Service = { image?: string; environment?: Record<string, string>; volumes?: string[]; ports?: string[]; depends_on?: unknown; healthcheck?: unknown };
type Compose = { services: Record<string, Service>; volumes: Record<string, unknown> };
const compose = parse(readFileSync(join(ROOT, "deploy", "compose.yaml"), "utf8"), { merge: true }) as Compose;

/** Compose's ${NAME:-default} and ${NAME:?message} with nothing set: the default, or a sample value. */
function interpolate(value: string, given: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind: string, rest: string) => given[name] ?? (kind === "-" ? rest : "shop-agent"));
}

describe("the Dockerfile", () => {
  const stage = finalStage();
  it("runs caplo serve as a non-root user, with its data in the one volume /data", () => {
    const users = stage.filter((step) => step.op === "USER").map((step) => step.args);
    expect(users.at(-1)).toBe("caplo");
    expect(stage.find((step) => step.op === "VOLUME")?.args).toBe('["/data"]');
    const env = stage.find((step) => step.op === "ENV")!.args;
    for (const setting of ["CAPLO_DB=/data/caplo.db", "CAPLO_RELEASES_DIR=/data/releases", "CAPLO_INVOCATION_LOG=/data/invocations.jsonl", "CAPLO_HOST=0.0.0.0"]) expect(env).toContain(setting);
    expect(stage.find((step) => step.op === "ENTRYPOINT")?.args).toContain("/app/bin/caplo.mjs");
    expect(stage.find((step) => step.op === "CMD")?.args).toBe('["serve"]');
    expect(stage.find((step) => step.op === "HEALTHCHECK")?.args).toContain("/healthz");
    // The sandbox's launcher needs these in the image (server/src/runner/sandbox.ts).
    expect(stage.find((step) => step.op === "RUN")?.args).toMatch(/util-linux.*mount.*bash/);
  });

  it("builds from files that exist: the widget's config, the CLI, the Node 24 installer", () => {
    for (const path of ["widget/vite.config.ts", "bin/caplo.mjs", "scripts/install-node24.mjs", "runtime/node24/package.json", ".dockerignore"]) expect(existsSync(join(ROOT, path)), path).toBe(true);
    expect(dockerfile).toContain("vite.js build -c widget/vite.config.ts");
  });
});

describe("deploy/compose.yaml", () => {
  it("names PostgreSQL, Redis, two Caplo nodes and one proxy, with the nodes' data in one volume", () => {
    expect(Object.keys(compose.services).sort()).toEqual(["caplo-1", "caplo-2", "postgres", "proxy", "redis"]);
    expect(Object.keys(compose.volumes).sort()).toEqual(["caplo-data", "postgres-data"]);
    const nodes = [compose.services["caplo-1"]!, compose.services["caplo-2"]!];
    for (const node of nodes) {
      expect(node.volumes).toEqual(["caplo-data:/data"]);
      expect(node.environment!.CAPLO_DATABASE_URL).toMatch(/^postgres:\/\/caplo:.*@postgres:5432\/caplo$/);
      expect(node.environment!.CAPLO_REDIS_URL).toBe("redis://redis:6379/0");
      expect(node.ports).toBeUndefined(); // reached only through the proxy
    }
    expect(nodes[0]!.environment!.CAPLO_NODE_ID).not.toBe(nodes[1]!.environment!.CAPLO_NODE_ID);
    expect(nodes[0]!.environment!.CAPLO_INVOCATION_LOG).not.toBe(nodes[1]!.environment!.CAPLO_INVOCATION_LOG);
    expect(compose.services.proxy!.ports).toEqual(["${CAPLO_PORT:-8080}:8080"]);
    expect(compose.services.postgres!.image).toMatch(/^postgres:/);
    expect(compose.services.redis!.image).toMatch(/^redis:/);
  });

  it("sets only Caplo settings the server accepts, with the Dockerfile's and its own values", () => {
    const imageEnv = Object.fromEntries(
      finalStage()
        .find((step) => step.op === "ENV")!
        .args.split(/\s+/)
        .map((pair) => pair.split("=") as [string, string]),
    );
    for (const name of ["caplo-1", "caplo-2"]) {
      const env = Object.fromEntries(Object.entries(compose.services[name]!.environment!).map(([key, value]) => [key, interpolate(String(value), {})]));
      const result = readConfig({ ...imageEnv, ...env });
      expect(result.ok ? [] : result.errors, name).toEqual([]);
      expect(result.warnings, name).toEqual([]);
      // What serve checks at start beyond the schema: the public address and the proxies' ranges.
      expect(readWidgetSettings(env)).toMatchObject({ ok: true, settings: { publicOrigins: ["http://localhost:8080"] } });
    }
  });

  it("the proxy sends both nodes' traffic, WebSocket upgrades and the client's address", () => {
    const nginx = readFileSync(join(ROOT, "deploy", "nginx.conf"), "utf8");
    expect(nginx).toContain("server caplo-1:8080");
    expect(nginx).toContain("server caplo-2:8080");
    expect(nginx).toMatch(/proxy_set_header Upgrade \$http_upgrade;/);
    expect(nginx).toMatch(/proxy_set_header X-Forwarded-For \$remote_addr;/);
    expect(compose.services.proxy!.volumes).toEqual(["./nginx.conf:/etc/nginx/conf.d/default.conf:ro"]);
  });
});
