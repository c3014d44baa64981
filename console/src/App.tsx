// The console: sign-in, then the shell (navigation, who is signed in, sign out) around the inbox, the
// conversation view, follow-ups, agents and tools, numbers and the workspace's audit. Routes are #hashes, so every view has an
// address a member can reload or share with a teammate.
import { useEffect, useState } from "preact/hooks";
import { call, setSession, whenSignedOut } from "./api.ts";
import { Inbox } from "./Inbox.tsx";
import { FollowUps } from "./FollowUps.tsx";
import { Releases } from "./Releases.tsx";
import { Audit } from "./Audit.tsx";
import { NumbersView } from "./Numbers.tsx";

type Session = { member: string; csrf: string | null };

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    // A change between the first render and this effect (Preact runs effects after the next frame) fired no
    // listener: read the hash again now, or the view stays the one first rendered (a member who went to
    // #/agents right after signing in kept seeing the inbox).
    changed();
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

export function App() {
  const [session, setSessionState] = useState<Session | null | undefined>(undefined);
  const [expired, setExpired] = useState(false);
  useEffect(() => {
    whenSignedOut(() => {
      setSession(null);
      setSessionState((was) => {
        if (was) setExpired(true);
        return null;
      });
    });
    void call<Session>("GET", "/v1/team/session").then((answer) => {
      if (answer.ok) setSession(answer.value.csrf);
      setSessionState(answer.ok ? answer.value : null);
    });
  }, []);
  if (session === undefined) return <main class="console center"><p>Loading…</p></main>;
  if (session === null)
    return (
      <SignIn
        expired={expired}
        onSignedIn={(signed) => {
          setSession(signed.csrf);
          setExpired(false);
          setSessionState(signed);
        }}
      />
    );
  return (
    <Shell
      member={session.member}
      onSignOut={async () => {
        await call("DELETE", "/v1/team/session");
        setSession(null);
        setSessionState(null);
      }}
    />
  );
}

function SignIn({ expired, onSignedIn }: { expired: boolean; onSignedIn: (session: Session) => void }) {
  const [token, setToken] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  async function submit(event: Event) {
    event.preventDefault();
    if (busy || !token) return;
    setBusy(true);
    const answer = await call<Session>("POST", "/v1/team/session", { token: token.trim() });
    setBusy(false);
    if (answer.ok) return onSignedIn(answer.value);
    setProblem(answer.status === 401 ? "That token is not a team member's token. Check it and try again." : answer.error.message);
  }
  return (
    <main class="console center">
      <form class="sign-in card" onSubmit={(e) => void submit(e)}>
        <h1>Caplo console</h1>
        {expired && <p class="notice" role="status">Your session ended. Sign in again to go on.</p>}
        <label for="token">Your team token</label>
        <input id="token" type="password" autoComplete="current-password" value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} required />
        <p class="muted">The token is exchanged for a session; the console never keeps it.</p>
        {problem && <p class="error" role="alert">{problem}</p>}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}

const VIEWS = [
  { hash: "#/inbox", label: "Inbox" },
  { hash: "#/follow-ups", label: "Follow-ups" },
  { hash: "#/agents", label: "Agents and tools" },
  { hash: "#/numbers", label: "Numbers" },
  { hash: "#/audit", label: "Audit" },
];

function Shell({ member, onSignOut }: { member: string; onSignOut: () => void }) {
  const hash = useHash();
  const view = VIEWS.find((v) => v.hash !== "#/inbox" && hash.startsWith(v.hash))?.hash ?? "#/inbox";
  const open = /^#\/c\/([^/]+)$/.exec(hash)?.[1];
  return (
    <div class="console shell">
      <header class="top">
        <span class="brand">Caplo console</span>
        <nav aria-label="Console">
          {VIEWS.map((v) => (
            <a key={v.hash} href={v.hash} aria-current={view === v.hash ? "page" : undefined}>
              {v.label}
            </a>
          ))}
        </nav>
        <span class="who">
          Signed in as <strong>{member}</strong>
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      {view === "#/inbox" && <Inbox member={member} open={open ? decodeURIComponent(open) : null} />}
      {view === "#/follow-ups" && <FollowUps />}
      {view === "#/agents" && <Releases />}
      {view === "#/numbers" && <NumbersView />}
      {view === "#/audit" && <Audit />}
    </div>
  );
}
