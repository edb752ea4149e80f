// Tiered entity resolution: a reference the model wrote for an id argument
// ("the Barista job" for `job_id`) is resolved to a record of the user's own data before the tool is called. Pure.
import { isIdentityLike } from '../../guards/tool-arguments';
import type { EntityMention, EntityResolution, NamedRecord, StoredToolData } from '../../contract/state';

/** A record of the user's gathered data that a reference can name: its id, its kind, and the words that describe it. */
export interface UserRecord {
  id: string;
  kind: string;
  label: string;
  words: Set<string>;
  /** The words of what it is called (its title or name), as opposed to its place, status or dates. */
  titleWords?: Set<string>;
  /** Its status as the data gives it ("screening", "paid"), and the job it is for: what the stage is read from. */
  status?: string;
  jobId?: string;
  /** The latest ISO date it holds (paid, due, updated, applied): how recent it is. */
  latestDate?: string;
}

/** Below this share of the mention's words found in a record, the match is a guess, and a guess is never sent. */
export const FUZZY_THRESHOLD = 0.5;

/** Words that say what kind of thing is meant, not which one: "the Barista job" names the Barista. */
const FILLER = new Set(
  'a an the my me i for of on at in to from with and or job jobs shift shifts gig position role application payment payout pay one'.split(
    ' ',
  ),
);
const MONTHS = 'january february march april may june july august september october november december'.split(' ');
/** Fields whose values say what a record is, to a person. */
const LABEL_FIELDS = ['title', 'job_title', 'name', 'location', 'status'];
const TITLE_FIELDS = ['title', 'job_title', 'name'];
const DATE_FIELDS = ['expected_date', 'paid_at', 'updated_at', 'applied_at', 'start_date'];

function wordsOf(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !FILLER.has(w));
}

/** An ISO date as the words a user writes for it ("november 27"). */
function dateWords(iso: string): string[] {
  const match = /^\d{4}-(\d{2})-(\d{2})/.exec(iso);
  const month = match ? MONTHS[Number(match[1]) - 1] : undefined;
  return month ? [month, String(Number(match![2]))] : [];
}

/** The argument's kind: `job_id` (or `jobId`) names a job, `application_id` an application. */
export function referenceKind(argument: string): string | null {
  const match = /^([a-z]+)(?:_id|Id)$/.exec(argument);
  return match && match[1] ? match[1].toLowerCase() : null;
}

/** A value that reads as an id rather than as words: no spaces, and a digit in it ("job-23", "4711"). */
function isIdLike(value: string): boolean {
  return /\d/.test(value) && !/\s/.test(value.trim());
}

/** Singular of the array key a record sits under: `applications` holds applications. */
function kindOfKey(key: string | null): string | null {
  if (!key) return null;
  return key.toLowerCase().replace(/ies$/, 'y').replace(/s$/, '');
}

/**
 * Every record in the user's own gathered data: objects with an `id` (kind from where they sit), and the jobs that
 * applications and payments point at through `job_id` and `job_title`.
 */
export function userRecords(toolData: Record<string, StoredToolData>): UserRecord[] {
  const found = new Map<string, UserRecord>();
  const add = (id: string, kind: string | null, fields: Record<string, unknown>) => {
    if (!kind) return;
    const key = `${kind} ${id}`;
    const labelParts = LABEL_FIELDS.flatMap((f) => (typeof fields[f] === 'string' ? [fields[f] as string] : []));
    const dates = DATE_FIELDS.flatMap((f) => (typeof fields[f] === 'string' ? dateWords(fields[f] as string) : []));
    const record = found.get(key) ?? { id, kind, label: labelParts.join(', '), words: new Set<string>() };
    for (const w of [...wordsOf(labelParts.join(' ')), ...dates]) record.words.add(w);
    const titles = TITLE_FIELDS.flatMap((f) => (typeof fields[f] === 'string' ? wordsOf(fields[f] as string) : []));
    if (titles.length) record.titleWords = new Set([...(record.titleWords ?? []), ...titles]);
    if (!record.label) record.label = labelParts.join(', ');
    if (typeof fields.status === 'string') record.status = fields.status;
    if (typeof fields.job_id === 'string') record.jobId = fields.job_id;
    for (const f of DATE_FIELDS) {
      const iso = typeof fields[f] === 'string' ? /^\d{4}-\d{2}-\d{2}/.exec(fields[f] as string)?.[0] : undefined;
      if (iso && (!record.latestDate || iso > record.latestDate)) record.latestDate = iso;
    }
    found.set(key, record);
  };
  const walk = (value: unknown, parentKey: string | null) => {
    if (Array.isArray(value)) return value.forEach((v) => walk(v, parentKey));
    if (!value || typeof value !== 'object') return;
    const fields = value as Record<string, unknown>;
    if (typeof fields.id === 'string' || typeof fields.id === 'number')
      add(String(fields.id), kindOfKey(parentKey), fields);
    if (typeof fields.job_id === 'string' && typeof fields.job_title === 'string') {
      add(fields.job_id, 'job', { title: fields.job_title });
    }
    for (const [key, child] of Object.entries(fields)) walk(child, key);
  };
  for (const stored of Object.values(toolData)) if (stored.success) walk(stored.data, null);
  return [...found.values()];
}

/** Two words match when equal, or, for longer words, one letter apart (a typo) or one the start of the other. */
function wordsMatch(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.length < 4 || b.length < 4) return false;
  if (a.startsWith(b) || b.startsWith(a)) return true;
  if (Math.abs(a.length - b.length) > 1 || a.length < 5) return false;
  let i = 0;
  let j = 0;
  let edits = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      i += 1;
      j += 1;
      continue;
    }
    edits += 1;
    if (edits > 1) return false;
    if (a.length > b.length) i += 1;
    else if (b.length > a.length) j += 1;
    else {
      i += 1;
      j += 1;
    }
  }
  return edits + (a.length - i) + (b.length - j) <= 1;
}

/** The share of the mention's words a record's words match. */
function matchScore(mention: string[], record: UserRecord): number {
  if (mention.length === 0) return 0;
  const words = [...record.words];
  return mention.filter((m) => words.some((w) => wordsMatch(m, w))).length / mention.length;
}

export type Resolution = { ok: true; resolution: EntityResolution } | { ok: false; error: string };

/**
 * Resolves one reference argument in tiers. Exact: the value is an id of the user's records, or reads as an id (no
 * spaces, a digit in it), which the tool itself then checks. Fuzzy: the value's words match one record of that kind
 * clearly best, at `FUZZY_THRESHOLD` or above. Anything else is refused with why, and the tool is not called.
 */
export function resolveReference(argument: string, value: string, records: UserRecord[]): Resolution {
  const kind = referenceKind(argument);
  const mention = value.trim();
  const sameKind = records.filter((r) => r.kind === kind);
  const exact = sameKind.find((r) => r.id.toLowerCase() === mention.toLowerCase());
  if (exact || isIdLike(mention)) {
    return {
      ok: true,
      resolution: { argument, mention, id: exact?.id ?? mention, tier: 'exact', score: 1, label: exact?.label ?? '' },
    };
  }
  const words = wordsOf(mention);
  const scored = sameKind
    .map((record) => ({ record, score: matchScore(words, record) }))
    .sort((a, b) => b.score - a.score);
  const [best, second] = scored;
  if (!best || best.score < FUZZY_THRESHOLD) {
    const known = sameKind.length
      ? `none of the user's ${sameKind.length} ${kind} record(s)`
      : `no ${kind} record of the user's gathered yet`;
    return {
      ok: false,
      error: `"${mention}" (${argument}) matches ${known}: not resolved, so the tool was not called`,
    };
  }
  if (second && second.score === best.score) {
    return {
      ok: false,
      error: `"${mention}" (${argument}) matches several of the user's records equally (${best.record.label}; ${second.record.label}): not resolved, so the tool was not called`,
    };
  }
  return {
    ok: true,
    resolution: {
      argument,
      mention,
      id: best.record.id,
      tier: 'fuzzy',
      score: Math.round(best.score * 100) / 100,
      label: best.record.label,
    },
  };
}

/** The arguments that name a record in words rather than by id: the call waits until the user's records are gathered. */
export function mentionArguments(args: Record<string, unknown>): [string, string][] {
  return Object.entries(args).flatMap(([name, value]) =>
    // An identity argument (`user_id`, `contact_id`) is the contact's, set by the tool policy: never a mention.
    referenceKind(name) && !isIdentityLike(name) && typeof value === 'string' && value.trim() && !isIdLike(value)
      ? [[name, value] as [string, string]]
      : [],
  );
}

/**
 * A call's arguments with every reference to a kind of record the user has resolved, and how; or why one could not be.
 * A kind the user's data holds no record of (a third-party tool's own ids) goes to the tool as the model wrote it.
 */
export function resolveCall(
  args: Record<string, unknown>,
  records: UserRecord[],
): { ok: true; arguments: Record<string, unknown>; resolved: EntityResolution[] } | { ok: false; error: string } {
  const resolved: EntityResolution[] = [];
  const kinds = new Set(records.map((r) => r.kind));
  const out = { ...args };
  for (const [name, value] of mentionArguments(args)) {
    if (!kinds.has(referenceKind(name)!)) continue;
    const result = resolveReference(name, value, records);
    if (!result.ok) return result;
    out[name] = result.resolution.id;
    resolved.push(result.resolution);
  }
  return { ok: true, arguments: out, resolved };
}

/** Kinds a talent names by the job they are for: "the barista application" is the application for the Barista job. */
const NAMED_BY_JOB = new Set(['job', 'application', 'payment', 'payout', 'shift', 'gig', 'position', 'role']);

/** The kind of record an entity is resolved among: the job for what is named by its job, else its own kind. */
function recordKindOf(entityKind: string, records: UserRecord[]): string | null {
  const kind = entityKind.trim().toLowerCase();
  if (NAMED_BY_JOB.has(kind)) return 'job';
  return records.some((r) => r.kind === kind) ? kind : null;
}

/** Two candidates closer than this in a tier are not told apart by it. */
export const CLEAR_MARGIN = 0.1;

/**
 * What the user named, resolved in the tiers that need no model: `exact` when one record is named by its id or has
 * every word of the mention as written, `fuzzy` when one matches its words (typos allowed) clearly best. Otherwise the
 * records still in question (the best ones, or every one of the kind when none matched) are the candidates for the
 * semantic tier. Null when the user's records hold nothing of the kind.
 */
export function resolveNamedRecord(entity: EntityMention, records: UserRecord[]): NamedRecord | null {
  const recordKind = recordKindOf(entity.kind, records);
  const sameKind = records.filter((r) => r.kind === recordKind);
  if (!recordKind || sameKind.length === 0) return null;
  const mention = entity.mention.trim();
  const words = wordsOf(mention);
  const named = (
    found: { record: UserRecord; tier: NamedRecord['tier']; score: number } | null,
    candidates: UserRecord[] = [],
  ): NamedRecord => ({
    kind: entity.kind,
    mention,
    record_kind: recordKind,
    id: found?.record.id ?? null,
    label: found?.record.label ?? '',
    tier: found?.tier ?? null,
    score: found ? Math.round(found.score * 100) / 100 : 0,
    candidates: candidates.map((r) => ({ id: r.id, label: r.label })),
  });
  const byId = sameKind.find((r) => r.id.toLowerCase() === mention.toLowerCase());
  if (byId) return named({ record: byId, tier: 'exact', score: 1 });
  const asWritten = words.length ? sameKind.filter((r) => words.every((w) => r.words.has(w))) : [];
  if (asWritten.length === 1) return named({ record: asWritten[0]!, tier: 'exact', score: 1 });
  const scored = sameKind
    .map((record) => ({ record, score: matchScore(words, record) }))
    .sort((a, b) => b.score - a.score);
  const [best, second] = scored;
  if (
    best &&
    best.score >= FUZZY_THRESHOLD &&
    (!second || best.score - second.score >= CLEAR_MARGIN) &&
    !namesAnotherTitle(words, best.record)
  ) {
    return named({ ...best, tier: 'fuzzy' });
  }
  const left =
    best && best.score >= FUZZY_THRESHOLD ? scored.filter((s) => best.score - s.score < CLEAR_MARGIN) : scored;
  return named(
    null,
    left.map((s) => s.record),
  );
}

/** Everything the user's gathered data holds about one record: the objects with its id, and those pointing at it. */
export function recordsAbout(toolData: Record<string, StoredToolData>, id: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const walk = (value: unknown) => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (!value || typeof value !== 'object') return;
    const fields = value as Record<string, unknown>;
    if (String(fields.id) === id || String(fields.job_id) === id) found.push(fields);
    else Object.values(fields).forEach(walk);
  };
  for (const stored of Object.values(toolData)) if (stored.success) walk(stored.data);
  return found;
}

/**
 * A mention that matches a record only by its place, status or dates while some of its words match nothing of it
 * ("the Barista position in Austin" against the Event Staff job in Austin) names a title the record does not have.
 */
function namesAnotherTitle(mention: string[], record: UserRecord): boolean {
  const words = [...record.words];
  const matched = mention.filter((m) => words.some((w) => wordsMatch(m, w)));
  if (matched.length === mention.length || !record.titleWords) return false;
  const titles = [...record.titleWords];
  return !matched.some((m) => titles.some((w) => wordsMatch(m, w)));
}

/** Cosine similarity of two vectors of the same length (0 when either is all zeros). */
export function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * (b[i] ?? 0);
    na += a[i]! * a[i]!;
    nb += (b[i] ?? 0) * (b[i] ?? 0);
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

/** Below this similarity a candidate is not what the user meant: the semantic tier drops it. */
export const SEMANTIC_THRESHOLD = 0.4;
/**
 * At or above this similarity, and clearly ahead, the semantic tier takes the record alone. Below it, similar is not
 * the same ("the sous chef job" is near the Line Cook job, and is not it): the model is asked about what is left.
 */
export const SEMANTIC_CERTAIN = 0.85;

/**
 * The semantic tier: the mention's and each candidate's embedding (mention first, then the candidates in order). It
 * keeps the candidates at `SEMANTIC_THRESHOLD` or above within `CLEAR_MARGIN` of the best, for the model to pick from,
 * and takes the best alone only when it is near-certain (`SEMANTIC_CERTAIN`) and clearly ahead.
 */
export function resolveSemantically(open: NamedRecord, vectors: number[][]): NamedRecord {
  const [mention, ...labels] = vectors;
  if (!mention || labels.length !== open.candidates.length) return open;
  const scored = open.candidates
    .map((candidate, i) => ({ candidate, score: cosine(mention, labels[i]!) }))
    .sort((a, b) => b.score - a.score);
  const [best, second] = scored;
  const near = scored.filter((s) => s.score >= SEMANTIC_THRESHOLD && best!.score - s.score < CLEAR_MARGIN);
  if (!best || best.score < SEMANTIC_CERTAIN || (second && best.score - second.score < CLEAR_MARGIN)) {
    return { ...open, candidates: near.map((s) => s.candidate) };
  }
  return {
    ...open,
    id: best.candidate.id,
    label: best.candidate.label,
    tier: 'semantic',
    score: Math.round(best.score * 100) / 100,
    candidates: [],
  };
}
