// The words every contract module speaks: the talent's journey stages, the team's suggested actions, the reply modes,
// what started a turn and the emotions tone reads. It imports nothing, so the contract modules above it form no circle.

/**
 * Where the talent is in their journey (seed 002's stages, for a staffing marketplace), furthest last. A turn reads it
 * from the talent's records first and from their words second; it steers Draft's guidance, boosts team examples from
 * the same stage, and is the `MelvinStage` search attribute. `exploring`: no application yet.
 */
export const STAGES = [
  'exploring',
  'applied',
  'screening',
  'interviewing',
  'offered',
  'hired',
  'working',
  'awaiting_payment',
  'paid',
] as const;
export type Stage = (typeof STAGES)[number];

/**
 * The team's next step a draft can propose (seed 002's suggested action), shown in the team's note and as the
 * `SuggestedAction` search attribute. Things only a person can do: Melvin tells the talent nothing it cannot keep.
 */
export const SUGGESTED_ACTIONS = [
  'reschedule_interview',
  'verify_payout_details',
  'ask_business_about_pay',
  'fix_account_access',
  'review_application',
] as const;
export type SuggestedActionName = (typeof SUGGESTED_ACTIONS)[number];

/** What started a turn: the webhook delivery or the operator's command. */
export interface Trigger {
  /** Webhook topic, or `cli` / `api` when an operator started the turn. */
  topic: string;
  notificationId: string;
  receivedAt: string;
}

/** How Melvin replies: on its own, after a lead approves each draft, or never (shadow: drafts noted for the team). */
export const REPLY_MODES = ['auto', 'approve', 'shadow'] as const;
export type ReplyMode = (typeof REPLY_MODES)[number];

/** The emotional cues Plan reads (seed 003): frustration and anger can hand a conversation to the team. */
export const TONE_EMOTIONS = ['frustrated', 'angry', 'anxious', 'confused', 'grateful'] as const;
