// Tone (seed 003): how the talent feels as Plan read it, and when that hands the conversation to a person. Pure.
import type { ToneHandover } from '../../contract/shared';
import type { AgentState, Tone } from '../../contract/state';

const COMPLAINING = new Set(['frustrated', 'angry']);

/** The turn's tone: its latest plan's reading (absent in plans from before tone was read). */
export function turnTone(state: AgentState): Tone | undefined {
  return [...state.hops].reverse().find((h) => h.plan?.tone)?.plan?.tone;
}

/** Whether the talent complains in this message: frustration or anger, of any strength. */
export function complains(tone: Tone | undefined): boolean {
  return tone?.emotions.some((e) => COMPLAINING.has(e.emotion)) ?? false;
}

/**
 * Why the conversation goes to a person because of how the talent feels, or null: strong frustration or anger (the
 * phrases behind it), or the Nth turn of the conversation in which they complain (this one included).
 */
export function toneHandoverReason(state: AgentState, settings: ToneHandover): string | null {
  const tone = turnTone(state);
  const strong = tone?.emotions.filter((e) => COMPLAINING.has(e.emotion) && e.intensity === 'strong') ?? [];
  if (settings.strong && strong.length) {
    return `strongly ${strong.map((e) => `${e.emotion}: “${e.phrase}”`).join('; ')}`;
  }
  if (settings.complaints < 1 || !complains(tone)) return null;
  const count = 1 + state.metadata.conversation.turns.filter((t) => t.complained).length;
  if (count < settings.complaints) return null;
  const phrases = tone!.emotions.filter((e) => COMPLAINING.has(e.emotion)).map((e) => `“${e.phrase}”`);
  return `complaint ${count} in this conversation: ${phrases.join(', ')}`;
}
