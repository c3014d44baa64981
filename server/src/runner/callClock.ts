// A call's deadline that stops while the visitor answers the tool's question: the time a visitor takes
// to answer an elicitation does not count against the tool's timeoutSeconds. The call aborts when its
// running time (not its waiting time) reaches the timeout.
export type CallClock = {
  /** When the call times out if nothing else pauses it (moves later after each wait). */
  deadline(): Date;
  /** A wait for the visitor begins (waits may overlap: the clock runs again when the last one ends). */
  pause(): void;
  resume(): void;
  stop(): void;
};

export function callClock(timeoutMs: number, onTimeout: () => void, now: () => number = Date.now): CallClock {
  let end = now() + timeoutMs;
  let waits = 0;
  let pausedAt = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    timer = setTimeout(() => {
      stopped = true;
      onTimeout();
    }, Math.max(0, end - now()));
  };
  arm();
  return {
    deadline: () => new Date(waits > 0 ? end + (now() - pausedAt) : end),
    pause() {
      if (stopped || waits++ > 0) return;
      clearTimeout(timer);
      pausedAt = now();
    },
    resume() {
      if (stopped || waits === 0 || --waits > 0) return;
      end += now() - pausedAt;
      arm();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
