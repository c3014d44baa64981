// Preloaded into a benchmarked server (node --import countProbe.mjs ...): counts what the process asks of
// its databases by wrapping the drivers themselves, the server's code unchanged, when started with
// CAPLO_BENCH_COUNTS=1 (the counts bench; the CPU figures are taken without the wrappers). better-sqlite3: every
// statement run (prepared statements and exec), and commits (COMMIT, or a write outside a transaction);
// pg: every query (one round trip each) and commits likewise, per client connection; ioredis: commands by
// name. Answers "counts" on the IPC channel with the totals and a breakdown by statement, "counts-reset"
// zeroes them, "cpu" answers the process's CPU time (ms). "profile-start" starts V8's CPU profiler,
// "profile-stop:FILE" writes what it sampled since to FILE (.cpuprofile, for DevTools or
// bench/engine/profile.ts), so a profile covers only a measured window, after the warm-up.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import Database from "better-sqlite3";
import Redis from "ioredis";
import pg from "pg";

let counts = fresh();
function fresh() {
  return { sqlite: { statements: 0, commits: 0 }, pg: { queries: 0, commits: 0 }, redis: { commands: 0 }, by: {} };
}
// Each statement's label is made once (a regular expression per statement run would be the probe's own cost).
const labels = new Map();
const label = (kind, text) => {
  const key = `${kind}\0${text}`;
  let made = labels.get(key);
  if (made === undefined) labels.set(key, (made = `${kind}: ${String(text).replace(/\s+/g, " ").trim().slice(0, 90)}`));
  return made;
};
const tally = (key) => (counts.by[key] = (counts.by[key] ?? 0) + 1);
const WRITE = /\b(INSERT|UPDATE|DELETE)\b/i;

if (process.env.CAPLO_BENCH_COUNTS === "1") wrapDrivers();

function wrapDrivers() {
  // better-sqlite3: wrap each prepared statement's run/get/all/iterate.
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (source, ...rest) {
    const statement = prepare.call(this, source, ...rest);
    const db = this;
    for (const method of ["run", "get", "all", "iterate"]) {
      const original = statement[method];
      statement[method] = function (...args) {
        counts.sqlite.statements += 1;
        tally(label("sqlite", source));
        const inTransaction = db.inTransaction;
        const result = original.apply(this, args);
        if (/^\s*COMMIT/i.test(source) || (!inTransaction && !/^\s*(BEGIN|ROLLBACK)/i.test(source) && !statement.reader && WRITE.test(source))) counts.sqlite.commits += 1;
        return result;
      };
    }
    return statement;
  };
  const exec = Database.prototype.exec;
  Database.prototype.exec = function (source) {
    counts.sqlite.statements += 1;
    tally(label("sqlite exec", source));
    return exec.call(this, source);
  };

  // pg: every query is one round trip; BEGIN..COMMIT is one commit, a write outside it an implicit one.
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (config, ...rest) {
    const text = typeof config === "string" ? config : (config?.text ?? config?.name ?? "");
    counts.pg.queries += 1;
    tally(label("pg", text));
    if (/^\s*BEGIN/i.test(text)) this.__benchTx = true;
    else if (/^\s*(COMMIT|ROLLBACK)/i.test(text)) {
      if (/^\s*COMMIT/i.test(text)) counts.pg.commits += 1;
      this.__benchTx = false;
    } else if (!this.__benchTx && WRITE.test(text)) counts.pg.commits += 1;
    return query.call(this, config, ...rest);
  };

  // ioredis: commands by name.
  const sendCommand = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function (command, ...rest) {
    counts.redis.commands += 1;
    tally(`redis: ${command?.name ?? "?"}`);
    return sendCommand.call(this, command, ...rest);
  };
}

let inspector;
process.on("message", async (message) => {
  if (message === "profile-start") {
    if (!inspector) {
      inspector = new Session();
      inspector.connect();
    }
    await inspector.post("Profiler.enable");
    await inspector.post("Profiler.setSamplingInterval", { interval: 200 });
    await inspector.post("Profiler.start");
    process.send?.({ profiling: true });
  } else if (typeof message === "string" && message.startsWith("profile-stop:")) {
    const { profile } = await inspector.post("Profiler.stop");
    writeFileSync(message.slice("profile-stop:".length), JSON.stringify(profile));
    process.send?.({ profiled: true });
  } else if (message === "counts") process.send?.({ counts });
  else if (message === "counts-reset") {
    counts = fresh();
    process.send?.({ reset: true });
  } else if (message === "cpu") {
    const cpu = process.cpuUsage();
    process.send?.({ cpuMs: (cpu.user + cpu.system) / 1000 });
  }
});
process.channel?.unref();
