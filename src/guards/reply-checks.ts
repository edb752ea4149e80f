// Checks of a drafted reply against what must never reach a user: other people's addresses, internal ids, internal
// notes, prompt text, and (./grounding) facts the turn does not rest on. Pure: the workflow runs them itself.
import { describeUngrounded, ungroundedFacts, type GroundingSources, type UngroundedKind } from './grounding';

const EMAIL = /[\w.+-]+@[\w-]+(\.[\w-]+)+/g;

const words = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];

/** True when `text` repeats `run` consecutive words of `source` (all of it, when `source` is shorter but ≥ 3 words). */
export function repeatsWordsOf(text: string, source: string, run: number): boolean {
  const haystack = ` ${words(text).join(' ')} `;
  const sourceWords = words(source);
  if (sourceWords.length < run) return sourceWords.length >= 3 && haystack.includes(` ${sourceWords.join(' ')} `);
  for (let i = 0; i + run <= sourceWords.length; i++) {
    if (haystack.includes(` ${sourceWords.slice(i, i + run).join(' ')} `)) return true;
  }
  return false;
}

/** Email addresses in `text` other than the conversation's own user's. */
export function otherEmailsIn(text: string, ownEmail: string | null): string[] {
  const own = ownEmail?.toLowerCase();
  return (text.match(EMAIL) ?? []).filter((email) => email.toLowerCase() !== own);
}

/** Every value of an `id` or `*_id` field in `value`: the internal identifiers of the gathered data. */
export function internalIds(value: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => internalIds(v, found));
  else if (value && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if ((key === 'id' || key.endsWith('_id')) && (typeof v === 'string' || typeof v === 'number'))
        found.add(String(v));
      else internalIds(v, found);
    }
  }
  return found;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether `text` shows `id` as a token of its own, in any case. A token is a run of letters, digits, "_" and "-", so
 * `pay_123`, `app-11` and `12345` are one token each: `250` shows in "ref 250." or "(250)", not in "app-250" or "2501".
 * A number written as an amount is not an id either: "$250", "€250", "250.00" and "1,250" do not show `250`.
 */
export function showsId(text: string, id: string): boolean {
  // Only a number can be an amount: "$pay_123" still shows `pay_123`.
  const currency = /^\d+$/.test(id) ? '$€£¥' : '';
  const notPrecededBy = `(?<![\\p{L}\\p{N}_\\-${currency}]|\\d[.,])`;
  const notFollowedBy = '(?![\\p{L}\\p{N}_\\-]|[.,]\\d)';
  return new RegExp(`${notPrecededBy}${escapeRegExp(id)}${notFollowedBy}`, 'iu').test(text);
}

export interface ReplyCheck {
  name: string;
  passed: boolean;
  detail: string;
}

/** Repeating six words of a note, or eight of a prompt, is quoting it; shorter runs are coincidence. */
const NOTE_RUN = 6;
const PROMPT_RUN = 8;

/**
 * Melvin's own last line before a reply goes out, whatever the validation service says: no other user's address, no
 * internal id from the data, no internal note, no prompt text, and, given its sources, every fact grounded and no action
 * claimed that no tool took. `idsAsSubstrings` is how ids were matched before they were matched as tokens (any
 * substring of the reply), kept for runs that replay a guard decided that way.
 */
export function checkReply(
  reply: string,
  known: {
    userEmail: string | null;
    internalNotes: string[];
    toolData: unknown;
    prompts?: string[];
    grounding?: GroundingSources;
  },
  options: { idsAsSubstrings?: boolean } = {},
): ReplyCheck[] {
  const emails = otherEmailsIn(reply, known.userEmail);
  const shown = (id: string) => (options.idsAsSubstrings ? reply.includes(id) : showsId(reply, id));
  const ids = [...internalIds(known.toolData)].filter((id) => id.length >= 3 && shown(id));
  const quotesNote = known.internalNotes.some((note) => repeatsWordsOf(reply, note, NOTE_RUN));
  const quotesPrompt = known.prompts?.some((prompt) => repeatsWordsOf(reply, prompt, PROMPT_RUN));
  const checks: ReplyCheck[] = [
    {
      name: 'no_other_user_data',
      passed: !emails.length,
      detail: emails.length ? `names other addresses: ${emails.join(', ')}` : 'names no other user',
    },
    {
      name: 'no_internal_ids',
      passed: !ids.length,
      detail: ids.length ? `shows internal ids: ${ids.join(', ')}` : 'shows no internal ids',
    },
    {
      name: 'no_internal_notes',
      passed: !quotesNote,
      detail: quotesNote ? 'repeats the text of an internal note' : 'repeats no internal note',
    },
  ];
  if (known.prompts) {
    checks.push({
      name: 'no_prompt_text',
      passed: !quotesPrompt,
      detail: quotesPrompt ? 'repeats the agent’s instructions' : 'repeats no instructions',
    });
  }
  if (known.grounding) {
    const problems = ungroundedFacts(reply, known.grounding);
    const of = (kinds: UngroundedKind[]) => describeUngrounded(problems.filter((p) => kinds.includes(p.kind)));
    const facts = of(['date', 'amount', 'number', 'time', 'name', 'record']);
    const actions = of(['action']);
    const promises = of(['promise']);
    checks.push(
      {
        name: 'facts_grounded',
        passed: !facts.length,
        detail: facts.length ? facts.join('; ') : 'every date, amount, number and name is in the turn’s sources',
      },
      {
        name: 'no_unbacked_actions',
        passed: !actions.length,
        detail: actions.length ? actions.join('; ') : 'claims no action Melvin did not take',
      },
      {
        name: 'no_unbacked_promises',
        passed: !promises.length,
        detail: promises.length ? promises.join('; ') : 'promises nothing the sources do not say',
      },
    );
  }
  return checks;
}
