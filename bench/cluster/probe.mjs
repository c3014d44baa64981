// Preloaded into each benchmarked `caplo serve` process (node --expose-gc --import probe.mjs): answers
// "mem" on the IPC channel with the process's memory after a full GC and its CPU time. caplo serve
// itself is unchanged; the channel is unreferenced so it never keeps the process alive.
process.on("message", (message) => {
  if (message !== "mem") return;
  globalThis.gc?.();
  const usage = process.memoryUsage();
  const cpu = process.cpuUsage();
  process.send?.({ rss: usage.rss, heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external, cpuMs: (cpu.user + cpu.system) / 1000 });
});
process.channel?.unref();
