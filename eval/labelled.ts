// The labelled figures: how Melvin's readings (tone, stage, the team's next step) agree with what a person labelled
// each scenario with.
import type { LABEL_ACTIONS, LABEL_STAGES } from '../sandbox/scenario';
import type { Stage, SuggestedActionName } from '../src/contract/vocabulary';
import type { TryRecord } from './tries';

/** The label lists are Melvin's: this fails to compile when either side gains a name the other lacks. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameStages: Same<(typeof LABEL_STAGES)[number], Stage> = true;
const _sameActions: Same<(typeof LABEL_ACTIONS)[number], SuggestedActionName> = true;

/** A try read otherwise than labelled, and what was read (and labelled), for a reader to look at. */
interface Misread {
  scenario: string;
  try: number;
  detail?: string;
}

/** "scenario (tries 1, 3: what was read)": the tries of a scenario read the same way, named once. */
function misreadLines(cases: Misread[]): string[] {
  const groups = new Map<string, { scenario: string; detail?: string; tries: number[] }>();
  for (const c of cases) {
    const key = `${c.scenario}\u0000${c.detail ?? ''}`;
    const group = groups.get(key) ?? { scenario: c.scenario, detail: c.detail, tries: [] };
    group.tries.push(c.try);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ scenario, detail, tries }) => {
    const numbers = tries.sort((a, b) => a - b).join(', ');
    return `${scenario} (tr${tries.length === 1 ? 'y' : 'ies'} ${numbers}${detail ? `: ${detail}` : ''})`;
  });
}

export interface Detection {
  /** Tries labelled as a complaint that Plan read as one, of those labelled so (recall's parts). */
  found: number;
  labelled: number;
  /** Tries Plan read as a complaint that were labelled so, of those it read so (precision's parts). */
  right: number;
  read: number;
}

export interface ToneFigures {
  tries: number;
  complaints: Detection;
  /** Tries whose urgency Plan read as labelled, of those with an urgency label. */
  urgency: { right: number; labelled: number };
  /** The tries Plan read differently from their label, for a reader to look at. */
  misread: string[];
}

export function toneFigures(tries: TryRecord[]): ToneFigures {
  const labelled = tries.filter((t) => t.labels?.tone && t.tone_read !== undefined);
  const complaints: Detection = { found: 0, labelled: 0, right: 0, read: 0 };
  const urgency = { right: 0, labelled: 0 };
  const misread: Misread[] = [];
  for (const t of labelled) {
    const label = t.labels!.tone!;
    const read = t.tone_read ?? { complains: false, urgency: 'normal' };
    if (label.complains) complaints.labelled += 1;
    if (read.complains) complaints.read += 1;
    if (label.complains && read.complains) {
      complaints.found += 1;
      complaints.right += 1;
    }
    let ok = label.complains === read.complains;
    if (label.urgency) {
      urgency.labelled += 1;
      if (label.urgency === read.urgency) urgency.right += 1;
      else ok = false;
    }
    if (!ok) misread.push({ scenario: t.scenario, try: t.try });
  }
  return { tries: labelled.length, complaints, urgency, misread: misreadLines(misread) };
}

export interface StageFigures {
  /** Tries whose first turn read the labelled stage, of those with a stage label. */
  right: number;
  labelled: number;
  misread: string[];
}

export function stageFigures(tries: TryRecord[]): StageFigures {
  const labelled = tries.filter((t) => t.labels?.stage !== undefined && t.stage_read !== undefined);
  const misread = labelled
    .filter((t) => t.labels!.stage !== t.stage_read)
    .map((t) => ({
      scenario: t.scenario,
      try: t.try,
      detail: `${t.stage_read ?? 'none'}, labelled ${t.labels!.stage ?? 'none'}`,
    }));
  return { right: labelled.length - misread.length, labelled: labelled.length, misread: misreadLines(misread) };
}

/** The team's next step: proposals that match the label (precision over proposals, recall over labelled steps). */
export function actionFigures(tries: TryRecord[]): Detection & { misread: string[] } {
  const labelled = tries.filter((t) => t.labels?.action !== undefined && t.action_read !== undefined);
  const figures = { found: 0, labelled: 0, right: 0, read: 0 };
  const misread: Misread[] = [];
  for (const t of labelled) {
    const label = t.labels!.action === 'none' ? null : t.labels!.action!;
    const read = t.action_read ?? null;
    if (label) figures.labelled += 1;
    if (read) figures.read += 1;
    if (label && read === label) {
      figures.found += 1;
      figures.right += 1;
    }
    if (label !== read) {
      misread.push({ scenario: t.scenario, try: t.try, detail: `${read ?? 'none'}, labelled ${label ?? 'none'}` });
    }
  }
  return { ...figures, misread: misreadLines(misread) };
}

export interface RetrievalFigures {
  /** Labelled tries whose first turn retrieved from the index (the others handed over before Draft, or had none). */
  retrievals: number;
  /** Retrievals whose best-ranked message came from a labelled conversation (hit@1). */
  first: number;
  /** Retrievals with a labelled conversation among everything ranked (hit@k, k = the ranking's top). */
  found: number;
  /** The mean over retrievals of 1 / the rank of the first labelled conversation among those ranked (0: none). */
  mrr: number;
  /** Labelled tries that retrieved nothing. */
  without: string[];
  /** Retrievals whose first conversation was not a labelled one, for a reader to look at. */
  misread: string[];
}

/** Retrieval relevance: how the index ranked the team's past conversations a person labelled as the question's kind. */
export function retrievalFigures(tries: TryRecord[]): RetrievalFigures {
  const labelled = tries.filter((t) => t.labels?.examples && t.examples_read !== undefined);
  const figures = { retrievals: 0, first: 0, found: 0 };
  const without: Misread[] = [];
  const misread: Misread[] = [];
  let reciprocalRanks = 0;
  for (const t of labelled) {
    const relevant = new Set(t.labels!.examples);
    const ranked = t.examples_read;
    if (!ranked) {
      without.push({ scenario: t.scenario, try: t.try });
      continue;
    }
    figures.retrievals += 1;
    const rank = ranked.findIndex((id) => relevant.has(id)) + 1;
    if (rank === 1) figures.first += 1;
    if (rank > 0) {
      figures.found += 1;
      reciprocalRanks += 1 / rank;
    }
    if (rank !== 1) {
      const detail = `${ranked[0] ?? 'none'}, labelled ${[...relevant].join(' or ')}`;
      misread.push({ scenario: t.scenario, try: t.try, detail });
    }
  }
  return {
    ...figures,
    mrr: figures.retrievals ? reciprocalRanks / figures.retrievals : 0,
    without: misreadLines(without),
    misread: misreadLines(misread),
  };
}
