// What a reply may not say Melvin did or will bring about: an action only a person or a writing tool can take, and a
// promise of when or whether something happens that the turn's sources do not make. Pure; ./grounding runs them.

/**
 * Verbs of what only a person or a writing tool can do to a talent's account, shifts, applications or pay, in the forms
 * a claim takes ("cancelled", "have updated", "am processing", "will refund"). Seeing, checking and handing to the team
 * are what Melvin does, so they are not here.
 */
const ACTION_VERBS: Record<string, string[]> = {
  cancel: ['cancel', 'cancels', 'cancelled', 'canceled', 'cancelling', 'canceling'],
  update: ['update', 'updates', 'updated', 'updating'],
  change: ['change', 'changes', 'changed', 'changing'],
  modify: ['modify', 'modifies', 'modified', 'modifying'],
  edit: ['edit', 'edits', 'edited', 'editing'],
  correct: ['correct', 'corrects', 'corrected', 'correcting'],
  fix: ['fix', 'fixes', 'fixed', 'fixing'],
  refund: ['refund', 'refunds', 'refunded', 'refunding'],
  reimburse: ['reimburse', 'reimburses', 'reimbursed', 'reimbursing'],
  pay: ['pay', 'pays', 'paid', 'paying'],
  send: ['send', 'sends', 'sent', 'sending', 'resend', 'resent', 'resending'],
  transfer: ['transfer', 'transfers', 'transferred', 'transferring'],
  issue: ['issue', 'issues', 'issued', 'issuing', 'reissue', 'reissued'],
  process: ['process', 'processes', 'processed', 'processing'],
  approve: ['approve', 'approves', 'approved', 'approving'],
  accept: ['accept', 'accepts', 'accepted', 'accepting'],
  reject: ['reject', 'rejects', 'rejected', 'rejecting'],
  decline: ['decline', 'declines', 'declined', 'declining'],
  withdraw: ['withdraw', 'withdraws', 'withdrew', 'withdrawn', 'withdrawing'],
  reschedule: ['reschedule', 'reschedules', 'rescheduled', 'rescheduling'],
  schedule: ['schedule', 'schedules', 'scheduled', 'scheduling'],
  book: ['book', 'books', 'booked', 'booking'],
  submit: ['submit', 'submits', 'submitted', 'submitting', 'resubmit', 'resubmitted'],
  apply: ['apply', 'applies', 'applied', 'applying'],
  reset: ['reset', 'resets', 'resetting'],
  delete: ['delete', 'deletes', 'deleted', 'deleting'],
  remove: ['remove', 'removes', 'removed', 'removing'],
  add: ['add', 'adds', 'added', 'adding'],
  mark: ['mark', 'marks', 'marked', 'marking'],
  release: ['release', 'releases', 'released', 'releasing'],
  expedite: ['expedite', 'expedites', 'expedited', 'expediting'],
  unlock: ['unlock', 'unlocks', 'unlocked', 'unlocking'],
  activate: ['activate', 'activates', 'activated', 'activating', 'reactivate', 'reactivated', 'reactivating'],
  restore: ['restore', 'restores', 'restored', 'restoring'],
  verify: ['verify', 'verifies', 'verified', 'verifying'],
  credit: ['credit', 'credits', 'credited', 'crediting'],
  waive: ['waive', 'waives', 'waived', 'waiving'],
  extend: ['extend', 'extends', 'extended', 'extending'],
  adjust: ['adjust', 'adjusts', 'adjusted', 'adjusting'],
  increase: ['increase', 'increases', 'increased', 'increasing'],
  assign: ['assign', 'assigns', 'assigned', 'assigning'],
  register: ['register', 'registers', 'registered', 'registering', 'enrol', 'enroll', 'enrolled', 'enrolling'],
  arrange: ['arrange', 'arranges', 'arranged', 'arranging'],
  switch: ['switch', 'switches', 'switched', 'switching'],
  contact: [
    'contact',
    'contacts',
    'contacted',
    'contacting',
    'email',
    'emailed',
    'call',
    'called',
    'notify',
    'notified',
  ],
};
/** The verb a form is of ("cancelled": cancel), or undefined for a word that is none of them. */
function verbOf(form: string): string | undefined {
  return Object.keys(ACTION_VERBS).find((base) => ACTION_VERBS[base]!.includes(form));
}

/** Past forms that do not end in -ed. */
const IRREGULAR_PAST = ['paid', 'sent', 'resent', 'withdrew', 'withdrawn', 'reset'];

/** What a form of one of the verbs is: done (past), going on (-ing), third person ("sends"), or plain ("send"). */
function formOf(form: string): 'past' | 'ing' | 'third' | 'plain' {
  if (form.endsWith('ing')) return 'ing';
  if (form.endsWith('ed') || IRREGULAR_PAST.includes(form)) return 'past';
  const forms = ACTION_VERBS[verbOf(form)!]!;
  const third = forms.some((f) => form === `${f}s` || form === `${f}es` || form === `${f.slice(0, -1)}ies`);
  return third ? 'third' : 'plain';
}

/**
 * "I" or "we", then what makes it a claim of having done, doing or going to do something ("'ve", "have", "am",
 * "will", "can", and words such as "just" or "went ahead and"), then the verb. A negation ("can't", "have not") stands
 * where the verb must, so a denial never matches; "we pay every Friday" (no auxiliary, not a past form) is a policy.
 */
const CLAIM = new RegExp(
  String.raw`\b(?:i|we)(?:['’](ve|ll|m|re)|\s+(have|has|had|will|am|are|can|could))?` +
    String.raw`(?:\s+(?:just|now|already|also|since|successfully|personally|been|gone\s+ahead\s+and|went\s+ahead\s+and|go\s+ahead\s+and))*` +
    String.raw`\s+(\p{L}+)`,
  'giu',
);
/** The same claim in the passive, with the talent as its beneficiary: "has been cancelled for you". */
const PASSIVE_CLAIM = /\b(?:has|have)\s+(?:now\s+|just\s+)?been\s+(\p{L}+)\s+for\s+you\b/giu;
/** Whom a hand-over goes to: "I've sent your question to the team" is what Melvin does. */
const TO_THE_TEAM = /\b(?:team|teammates?|colleagues?|a person|a human|someone|specialists?|support)\b/i;

/**
 * Whether a verb form after an auxiliary (or none) makes a claim: "cancelled" alone, "will cancel", "can cancel",
 * "have cancelled", "have been cancelling", "am cancelling". Not "we cancel shifts that…" (a policy).
 */
function claims(auxiliary: string | undefined, form: string): boolean {
  const kind = formOf(form);
  if (!auxiliary) return kind === 'past';
  if (['ll', 'will', 'can', 'could'].includes(auxiliary)) return kind === 'plain';
  if (['ve', 'have', 'has', 'had'].includes(auxiliary)) return kind === 'past' || kind === 'ing';
  return kind === 'ing';
}

/** The clause after a verb: up to the end of its sentence, a comma, or an "and" or "but" that starts another. */
function clauseAfter(text: string, from: number): string {
  const rest = text.slice(from);
  const end = rest.search(/[.!?;,]|\band\b|\bbut\b/i);
  return end === -1 ? rest : rest.slice(0, end);
}

/** Verbs joined to a claim in its sentence ("I checked and cancelled it", "I've updated X, then sent Y"). */
const JOINED_VERB = /(?:,\s*|\b(?:and|then)\s+)(?:(?:also|then|just)\s+)?(\p{L}+)/giu;

/** Claims of an action no writing tool of this turn took, as written. */
export function claimedActions(reply: string, actionsTaken: string[]): string[] {
  const backed = (base: string) => actionsTaken.some((tool) => tool.toLowerCase().includes(base));
  const found: string[] = [];
  const consider = (form: string, from: number, to: number) => {
    const base = verbOf(form)!;
    if (backed(base) || TO_THE_TEAM.test(clauseAfter(reply, to))) return;
    found.push(`${reply.slice(from, to)}${clauseAfter(reply, to)}`.trim());
  };
  for (const m of reply.matchAll(CLAIM)) {
    const auxiliary = (m[1] ?? m[2])?.toLowerCase();
    const end = m.index + m[0].length;
    const form = m[3]!.toLowerCase();
    if (verbOf(form) && claims(auxiliary, form)) consider(form, m.index, end);
    const sentence = reply.slice(end).split(/[.!?\n]/)[0]!;
    for (const j of sentence.matchAll(JOINED_VERB)) {
      const joined = j[1]!.toLowerCase();
      const at = end + j.index + j[0].length;
      if (verbOf(joined) && claims(auxiliary, joined)) consider(joined, at - joined.length, at);
    }
  }
  for (const m of reply.matchAll(PASSIVE_CLAIM)) consider(m[1]!.toLowerCase(), m.index, m.index + m[0].length);
  return found;
}

/**
 * Words that promise when something happens ("by tomorrow", "within 24 hours", "soon") or that it surely will ("I
 * promise", "guaranteed", "definitely"). A data date makes "today" or "tomorrow" good; the rest must be in the sources
 * as written (the help center's "within two business days", the talent's own "tomorrow").
 */
const PROMISE = new RegExp(
  [
    // "Today" is a promise only with what happens by then ("it arrives today"), not in "how can I help you today".
    String.raw`\b(?:tonight|tomorrow)\b`,
    String.raw`\b(?:by|before|until|till|later|sometime)\s+today\b`,
    String.raw`\b(?:will|['’]ll|arrives?|lands?|goes\s+out|comes?|be\s+(?:paid|sent|there|done|sorted|fixed))\b[^.!?]{0,40}?\btoday\b`,
    String.raw`\b(?:this|next)\s+(?:morning|afternoon|evening|week|weekend|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b`,
    String.raw`\b(?:by|before|over)\s+the\s+(?:end\s+of\s+the\s+(?:day|week|month)|weekend)\b`,
    String.raw`\b(?:very\s+|really\s+)?(?:soon|shortly|right\s+away|immediately|asap)\b`,
    String.raw`\b(?:in|within)\s+(?:a|an|one|two|three|four|five|a\s+few|a\s+couple\s+of|\d+)\s+(?:business\s+|working\s+)?(?:minutes?|hours?|days?|weeks?)\b`,
    String.raw`\b(?:guarantee[ds]?|promise[ds]?|definitely|certainly|for\s+sure|sure\s+to|without\s+(?:a\s+)?doubt)\b`,
  ].join('|'),
  'gi',
);

/**
 * Promises of the reply that its data does not make, as written: `dataText` is the tools' results and the help
 * center's passages (the talent asking "will it come today?" backs no promise that it will); `today` is the turn's date.
 */
export function unbackedPromises(reply: string, dataText: string, dataDates: string[], today?: string): string[] {
  const said = dataText.toLowerCase().replace(/\s+/g, ' ');
  const dayAfter = (days: number) =>
    today ? new Date(Date.parse(`${today}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10) : null;
  const found: string[] = [];
  for (const m of reply.matchAll(PROMISE)) {
    const phrase = m[0].toLowerCase().replace(/\s+/g, ' ');
    if (said.includes(phrase)) continue;
    const offset = { today: 0, tonight: 0, tomorrow: 1 }[phrase.split(' ').at(-1)!];
    const date = offset === undefined ? null : dayAfter(offset);
    if (date && dataDates.includes(date)) continue;
    found.push(m[0]);
  }
  return found;
}
