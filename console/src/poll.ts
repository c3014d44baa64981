// Live data by polling the team API: every node reads the same store, so a member sees what any node
// stored (a customer's message on node A, a teammate's takeover on node B) within one interval.
import { useEffect, useRef, useState } from "preact/hooks";
import { call, type ApiError } from "./api.ts";

export const POLL_MS = 2000;

export function usePoll<T>(path: string | null, ms = POLL_MS): { data: T | null; error: ApiError | null; refresh: () => void } {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const tick = useRef(0);
  const [nudge, setNudge] = useState(0);
  useEffect(() => {
    if (!path) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const mine = ++tick.current;
    const load = async () => {
      const answer = await call<T>("GET", path);
      if (stopped || mine !== tick.current) return;
      if (answer.ok) {
        setData(answer.value);
        setError(null);
      } else setError(answer.error);
      // A failed load is tried again within POLL_MS, whatever the view's interval: a view polled every 30 s
      // otherwise showed a passing failure (a node restarting) for 30 s.
      timer = setTimeout(() => void load(), answer.ok ? ms : Math.min(ms, POLL_MS));
    };
    void load();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [path, ms, nudge]);
  useEffect(() => {
    if (path === null) setData(null);
  }, [path]);
  return { data, error, refresh: () => setNudge((n) => n + 1) };
}

/** "3 min", "2 h 5 min": how long since an ISO time. */
export function since(at: string | null, now = Date.now()): string {
  if (!at) return "";
  const seconds = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} days`;
}

export function timeOf(at: string | null): string {
  return at ? new Date(at).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" }) : "";
}
