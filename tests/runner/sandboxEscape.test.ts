// Real escape attempts from a hostile package (packages/escape): each must fail, while the one
// listed host still works through the egress proxy, so the failures are the sandbox and not a broken
// network path.
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CaploToolRunner } from "../../server/src/runner/toolRunner.ts";
import { REPO_ROOT } from "../../server/src/runner/node24.ts";
import { PACKAGES_DIR, TEST_HOST, testVersion } from "./testPackages.ts";

type Report = { ok: boolean; value?: unknown; code?: string; message?: string; cause?: string };

const SERVER_SECRET = "server-env-secret-value-7c1e";
let http: Server;
let unixServer: NetServer;
let unixDir: string;
let port = 0;
let runner: CaploToolRunner;
const version = testVersion(
  "escape",
  [{ name: "attempt", policy: { effect: "read", timeoutSeconds: 15 } }],
  { egress: ["allowed.test", "localhost", "*.suffix.test"] },
);
// The same hostile code in a package that declares no egress: it has no network at all.
const offline = testVersion("escape", [{ name: "attempt", policy: { effect: "read", timeoutSeconds: 15 } }], { egress: [] });

async function attempt(kind: string, extra: Record<string, unknown> = {}, packageVersionId = version.id): Promise<Report> {
  const result = await runner.call({
    packageVersionId,
    tool: "attempt",
    args: { kind, ...extra },
    context: { invocationId: `inv-${kind}`, secrets: {} },
  });
  expect(result.isError, result.modelText).toBe(false);
  return result.structuredContent as Report;
}

beforeAll(async () => {
  process.env.CAPLO_TEST_SERVER_SECRET = SERVER_SECRET;
  http = createHttpServer((request, response) => response.end(`internal ${request.url}`));
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  port = (http.address() as { port: number }).port;
  unixDir = mkdtempSync(join(tmpdir(), "caplo-escape-"));
  unixServer = createNetServer((socket) => socket.end("unix secret"));
  await new Promise<void>((resolve) => unixServer.listen(join(unixDir, "service.sock"), resolve));
  runner = new CaploToolRunner({ hostModule: TEST_HOST, egressResolve: `allowed.test=127.0.0.1:${port}` });
  await runner.load(version);
  await runner.load(offline);
}, 60_000);

afterAll(async () => {
  await runner?.close();
  await new Promise((resolve) => http?.close(resolve));
  await new Promise((resolve) => unixServer?.close(resolve));
  rmSync(unixDir, { recursive: true, force: true });
  delete process.env.CAPLO_TEST_SERVER_SECRET;
});

describe("sandbox isolation (namespaces available here)", () => {
  it("runs packages in the isolated mode, not the weak one", () => {
    expect(runner.sandboxMode).toBe("isolated");
  });

  it("reaches a listed host through the egress proxy (the control case)", async () => {
    const report = await attempt("fetch_listed");
    expect(report).toEqual({ ok: true, value: "internal /hello" });
  });

  it("cannot fetch a host that is not in egress", async () => {
    const report = await attempt("fetch_unlisted");
    expect(report.ok).toBe(false);
    expect(report.cause).toContain("not in the package's egress list");
  });

  it("cannot fetch an IP literal, even loopback where a server listens", async () => {
    const report = await attempt("fetch_ip_literal", { port });
    expect(report.ok).toBe(false);
    expect(report.cause).toContain("IP literal");
  });

  it("cannot fetch a decimal-encoded IP literal", async () => {
    const report = await attempt("fetch_decimal_ip", { port });
    expect(report.ok).toBe(false);
  });

  it("cannot reach loopback through a listed name that resolves to it (DNS trick)", async () => {
    const report = await attempt("fetch_localhost_listed");
    expect(report.ok).toBe(false);
    expect(report.cause).toContain("private, loopback or link-local");
  });

  it("cannot fetch IP literals in other spellings: IPv6 loopback, IPv4-mapped, hex, short form, on 80 too", async () => {
    for (const url of [`http://[::1]:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://0x7f000001:${port}/`, `http://127.1:${port}/`, "http://127.0.0.1/", "https://[::1]/"]) {
      const report = await attempt("fetch_url", { url });
      expect(report.ok, url).toBe(false);
      expect(report.cause, url).toContain("IP literal");
    }
  });

  it("cannot reach loopback through a listed name written in capitals or with a trailing dot", async () => {
    for (const url of ["http://LOCALHOST/", "http://localhost./"]) {
      const report = await attempt("fetch_url", { url });
      expect(report.ok, url).toBe(false);
      expect(report.cause, url).toContain("private, loopback or link-local");
    }
  });

  it("cannot use a port other than 443 and 80 on a listed host", async () => {
    const report = await attempt("fetch_bad_port", { port });
    expect(report.ok).toBe(false);
    expect(report.cause).toContain("port");
  });

  it("*.suffix does not admit the suffix itself", async () => {
    const report = await attempt("fetch_suffix_itself");
    expect(report.ok).toBe(false);
    expect(report.cause).toContain("not in the package's egress list");
  });

  it("*.suffix admits no spelling of the suffix itself (trailing dot, capitals), only names under it", async () => {
    for (const url of ["https://suffix.test./", "https://SUFFIX.TEST/", "http://suffix.test/"]) {
      const report = await attempt("fetch_url", { url });
      expect(report.ok, url).toBe(false);
      expect(report.cause, url).toContain("not in the package's egress list");
    }
    // A name under the suffix passes the list; it then fails only because it does not resolve.
    const under = await attempt("fetch_url", { url: "https://a.suffix.test/" });
    expect(under.ok).toBe(false);
    expect(under.cause).toContain("could not be resolved");
  });

  it("talking to the proxy socket directly (bypassing the preload) is refused just the same", async () => {
    const heads = [
      "CONNECT allowed.test:80 HTTP/1.1", // the control: a listed host is tunnelled
      "CONNECT 127.0.0.1:80 HTTP/1.1",
      `CONNECT 127.0.0.1:${port} HTTP/1.1`,
      "CONNECT [::1]:443 HTTP/1.1",
      "CONNECT 2130706433:80 HTTP/1.1",
      "CONNECT localhost:80 HTTP/1.1",
      "CONNECT unlisted.example.org:443 HTTP/1.1",
      "CONNECT suffix.test.:443 HTTP/1.1",
      `CONNECT allowed.test:${port} HTTP/1.1`,
      "CONNECT allowed.test@127.0.0.1:80 HTTP/1.1",
      "CONNECT allowed.test HTTP/1.1",
      "GET http://allowed.test/hello HTTP/1.1\r\nhost: allowed.test",
    ];
    const report = await attempt("raw_proxy", { heads });
    expect(report.ok, report.message).toBe(true);
    const answers = report.value as Record<string, { status: string; code?: string }>;
    expect(Object.fromEntries(Object.entries(answers).map(([head, answer]) => [head.split("\r\n")[0], answer.code ?? answer.status]))).toEqual({
      "CONNECT allowed.test:80 HTTP/1.1": "HTTP/1.1 200 Connection Established",
      "CONNECT 127.0.0.1:80 HTTP/1.1": "egress_ip_literal",
      [`CONNECT 127.0.0.1:${port} HTTP/1.1`]: "egress_ip_literal",
      "CONNECT [::1]:443 HTTP/1.1": "egress_ip_literal",
      "CONNECT 2130706433:80 HTTP/1.1": "egress_ip_literal",
      "CONNECT localhost:80 HTTP/1.1": "egress_private_address",
      "CONNECT unlisted.example.org:443 HTTP/1.1": "egress_host_not_listed",
      "CONNECT suffix.test.:443 HTTP/1.1": "egress_host_not_listed",
      [`CONNECT allowed.test:${port} HTTP/1.1`]: "egress_port",
      "CONNECT allowed.test@127.0.0.1:80 HTTP/1.1": "egress_bad_host",
      "CONNECT allowed.test HTTP/1.1": "egress_bad_request",
      "GET http://allowed.test/hello HTTP/1.1": "egress_method",
    });
  });

  it("a package without egress has no network at all, not even to a host another package lists", async () => {
    const report = await attempt("fetch_listed", {}, offline.id);
    expect(report.ok).toBe(false);
    expect(report.cause).toContain("declares no egress");
    const direct = await attempt("net_host_ip", { port, hostIp: "10.255.255.1" }, offline.id);
    expect(direct.code).toBe("ENETUNREACH");
  });

  it("node:http and node:https go through the egress proxy under the same rule as fetch", async () => {
    expect(await attempt("http_module_get", { url: "http://allowed.test/hello" })).toEqual({ ok: true, value: "internal /hello" });
    for (const [url, reason] of [
      ["https://unlisted.example.org/", "not in the package's egress list"],
      [`http://127.0.0.1:${port}/`, "IP literal"],
      ["http://localhost/", "private, loopback or link-local"],
      [`http://allowed.test:${port}/`, "port"],
      ["https://suffix.test/", "not in the package's egress list"],
    ] as const) {
      const report = await attempt("http_module_get", { url });
      expect(report.ok, url).toBe(false);
      expect(report.message, url).toContain("egress refused");
      expect(report.message, url).toContain(reason);
    }
  });

  it("cannot bypass fetch with node:http, node:net or node:tls", async () => {
    for (const kind of ["http_get_direct", "net_loopback", "tls_direct"]) {
      const report = await attempt(kind, { port });
      expect(report.ok, kind).toBe(false);
    }
    const report = await attempt("net_host_ip", { port, hostIp: "10.255.255.1" });
    expect(report.ok).toBe(false);
    expect(report.code).toBe("ENETUNREACH");
  });

  it("cannot resolve names itself (no DNS inside the sandbox)", async () => {
    expect((await attempt("dns_lookup")).ok).toBe(false);
    expect((await attempt("dns_resolve")).ok).toBe(false);
  });

  it("cannot connect to a Unix socket of the host", async () => {
    const report = await attempt("unix_socket", { path: join(unixDir, "service.sock") });
    expect(report.ok).toBe(false);
    expect(report.code).toBe("ENOENT");
  });

  it("cannot read /etc/passwd, the runner's files, another package or /proc", async () => {
    for (const [kind, path] of [
      ["read_passwd", undefined],
      ["read_runner", join(REPO_ROOT, "server", "src", "runner", "toolRunner.ts")],
      ["read_other_package", join(PACKAGES_DIR, "other", "private.txt")],
      ["read_proc_environ", undefined],
      ["list_root", undefined],
    ] as const) {
      const report = await attempt(kind, path ? { path } : {});
      expect(report.ok, kind).toBe(false);
      expect(report.code, kind).toBe("ERR_ACCESS_DENIED");
    }
  });

  it("cannot reach the runner's files through a symlink in node_modules it may read (workspace links)", async () => {
    // node_modules/@caplo/server -> ../../server: Node's permission model allows the path (under
    // node_modules) and would follow the link, but the link's target is not in the sandbox's root.
    const viaLink = join(REPO_ROOT, "node_modules", "@caplo", "server", "src", "runner", "toolRunner.ts");
    const report = await attempt("read_runner", { path: viaLink });
    expect(report.ok).toBe(false);
    expect(report.code).toBe("ENOENT");
    const manifest = await attempt("read_runner", { path: join(REPO_ROOT, "node_modules", "@caplo", "server", "package.json") });
    expect(manifest.ok).toBe(false);
    expect(manifest.code).toBe("ENOENT");
    // The permission model follows the link (a known limit of it: the direct path is denied), so what
    // stops it is the root: all the link shows is the empty folder the sandbox made to mount its preload.
    const listing = await attempt("list_relative", { path: join(REPO_ROOT, "node_modules", "@caplo", "server") });
    expect(listing.value).toEqual(["src"]);
    const direct = await attempt("list_relative", { path: join(REPO_ROOT, "server", "src", "runner") });
    expect(direct.code).toBe("ERR_ACCESS_DENIED");
  });

  it("cannot write files, even in its own folder or /tmp, nor a heap snapshot", async () => {
    const report = await attempt("write_file", { path: join(PACKAGES_DIR, "escape", "pwned.txt") });
    expect(report.ok).toBe(false);
    expect(report.code).toBe("ERR_ACCESS_DENIED");
    for (const kind of ["write_tmp", "heap_snapshot"]) {
      const other = await attempt(kind);
      expect(other.ok, kind).toBe(false);
      expect(other.code, kind).toBe("ERR_ACCESS_DENIED");
    }
  });

  it("does not see the server's environment", async () => {
    const report = await attempt("env");
    expect(report.ok).toBe(true);
    const env = report.value as Record<string, string>;
    expect(JSON.stringify(env)).not.toContain(SERVER_SECRET);
    // Exactly these: no PATH, no egress socket, not even the launcher shell's PWD (the runner's folder).
    expect(Object.keys(env).sort()).toEqual(["LANG", "NODE_ENV", "TZ"]);
  });

  it("starts in the sandbox's root: relative paths do not reach the runner's working folder", async () => {
    expect((await attempt("cwd")).value).toEqual({ cwd: "/", pwd: null });
    for (const [kind, path] of [
      ["read_relative", "package.json"],
      ["read_relative", "../../etc/passwd"],
      ["list_relative", "."],
    ] as const) {
      const report = await attempt(kind, { path });
      expect(report.ok, `${kind} ${path}`).toBe(false);
      expect(report.code, `${kind} ${path}`).toBe("ERR_ACCESS_DENIED");
    }
  });

  it("cannot start child processes, workers or addons", async () => {
    for (const kind of ["child_process", "worker", "addon"]) {
      const report = await attempt(kind);
      expect(report.ok, kind).toBe(false);
      // The permission model refuses addons with its own code.
      expect(report.code, kind).toBe(kind === "addon" ? "ERR_DLOPEN_DISABLED" : "ERR_ACCESS_DENIED");
    }
  });

  it("cannot spawn through process.binding, a data: URL worker, the inspector or WASI", async () => {
    for (const kind of ["binding_spawn", "worker_data_url", "inspector", "wasi"]) {
      const report = await attempt(kind);
      expect(report.ok, kind).toBe(false);
      expect(report.code, kind).toBe("ERR_ACCESS_DENIED");
    }
  });

  it("runs as an unprivileged user and cannot become root again", async () => {
    const report = await attempt("setuid_root");
    expect(report.ok).toBe(false);
    expect(report.code).toBe("EPERM");
  });

  it("cannot signal processes outside its sandbox", async () => {
    const report = await attempt("kill_parent", { pid: process.pid });
    expect(report.ok).toBe(false);
    expect(["ESRCH", "EPERM"]).toContain(report.code);
  });
});
