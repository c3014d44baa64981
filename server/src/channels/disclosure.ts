// What the automated-assistant notice on Messenger and Instagram says (Meta requires one): a person is
// promised only where the agent has a handoff destination for the channel; otherwise it says how to reach
// the shop (agent.yaml `contact`, else the shop's https website, else to contact the shop directly).
import { AGENT_DISCLOSURE } from "@caplo/adapters/common/text";
import type { ChannelAgentConfig, Platform } from "./ports.ts";

export function disclosureText(config: (ChannelAgentConfig & { origins?: string[] }) | undefined, platform: Platform): string {
  if (config?.channels[platform]?.handoff) return AGENT_DISCLOSURE;
  const website = config?.origins?.find((origin) => origin.startsWith("https://"));
  const reach = config?.contact ? config.contact : website ? `visit ${website}` : "contact the shop directly";
  return `You are chatting with an automated assistant, which cannot pass you to a person here. To reach the shop, ${reach}.`;
}
