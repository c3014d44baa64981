// Step-up checks: whether a verified subject is strong and recent enough for what a tool asked
// (`stepUpRequired({ level, maxAuthAgeSeconds })`). Levels are ordered low < standard < high.
import { STEP_UP_LEVELS, type CallSubject, type StepUp, type StepUpLevel } from "@caplo/shared";

/** Why a subject falls short of a step-up, or undefined when it does not. */
export type StepUpShortfall = "level_too_low" | "auth_too_old" | "auth_time_invalid";

export function levelRank(level: StepUpLevel): number {
  return STEP_UP_LEVELS.indexOf(level);
}

/** What the subject lacks for this step-up at `now`; undefined when it is satisfied. */
export function stepUpShortfall(subject: CallSubject, stepUp: StepUp, now: Date): StepUpShortfall | undefined {
  if (levelRank(subject.level) < levelRank(stepUp.level)) return "level_too_low";
  if (stepUp.maxAuthAgeSeconds === undefined) return undefined;
  const authTime = Date.parse(subject.authTime);
  if (Number.isNaN(authTime)) return "auth_time_invalid";
  // Whole seconds, as auth_time is: a sign-in exactly maxAuthAgeSeconds ago still counts.
  const ageSeconds = Math.floor((now.getTime() - authTime) / 1000);
  return ageSeconds > stepUp.maxAuthAgeSeconds ? "auth_too_old" : undefined;
}

/** True when the subject verified at the level or higher, within maxAuthAgeSeconds if one is set. */
export function satisfiesStepUp(subject: CallSubject, stepUp: StepUp, now: Date): boolean {
  return stepUpShortfall(subject, stepUp, now) === undefined;
}
