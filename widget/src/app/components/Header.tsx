// The widget's header: the agent's avatar, name and an "AI" label, the Verified badge (only when the
// server says so), starting a new conversation, downloading the transcript, and closing the chat.
import type { WidgetAgent } from "@caplo/shared";
import { useWidget } from "../context.ts";
import { clampText, safeUrl } from "../format.ts";

export interface HeaderProps {
  agent: WidgetAgent | undefined;
  verified: boolean;
  canRestart: boolean;
  onRestart: () => void;
  onTranscript: () => void;
  onClose: () => void;
}

export function Header({ agent, verified, canRestart, onRestart, onTranscript, onClose }: HeaderProps) {
  const { t } = useWidget();
  const avatar = agent?.avatar ? safeUrl(agent.avatar) : null;
  const name = agent?.name ? clampText(agent.name, 60) : t.title;
  return (
    <header class="bar">
      {avatar ? <img class="avatar" src={avatar} alt="" referrerpolicy="no-referrer" /> : <span class="avatar initial" aria-hidden="true">{name.charAt(0)}</span>}
      <h1 dir="auto">
        {name}
        <abbr class="ai" title={t.aiLabel}>
          <span aria-hidden="true">{t.ai}</span>
          <span class="sr-only">{`, ${t.aiLabel}`}</span>
        </abbr>
      </h1>
      {verified && <span class="badge verified">{t.verified}</span>}
      <button type="button" class="icon" aria-label={t.downloadTranscript} title={t.downloadTranscript} onClick={onTranscript}>
        <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true"><path fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" d="M12 4v11m-5-5 5 5 5-5M5 20h14" /></svg>
      </button>
      <button type="button" class="icon" aria-label={t.newConversation} title={t.newConversation} disabled={!canRestart} onClick={onRestart}>
        <svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true"><path fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" d="M12 5v14M5 12h14" /></svg>
      </button>
      <button type="button" class="icon close" aria-label={t.close} onClick={onClose}>
        <svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true"><path fill="none" stroke="currentColor" stroke-width="2.5" stroke-linecap="round" d="M6 6l12 12M18 6L6 18" /></svg>
      </button>
    </header>
  );
}
