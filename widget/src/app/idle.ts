// Work for when the browser is idle: a task of its own, at the latest after a second.

type IdleWindow = {
  requestIdleCallback?: (callback: () => void, options: { timeout: number }) => number;
  cancelIdleCallback?: (handle: number) => void;
};

/** Runs `work` when the browser is idle (or after a second); the returned function cancels it if it has not run. */
export function whenIdle(work: () => void): () => void {
  const idle = window as IdleWindow;
  if (idle.requestIdleCallback && idle.cancelIdleCallback) {
    const handle = idle.requestIdleCallback(work, { timeout: 1000 });
    return () => idle.cancelIdleCallback!(handle);
  }
  const timer = setTimeout(work, 1);
  return () => clearTimeout(timer);
}
