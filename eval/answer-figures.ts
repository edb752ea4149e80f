// The figures beside pass^k that say how good the answers were, turn by turn: answerable questions handed over,
// replies about something else or against the data, and replies that read like a template. Pure functions over tries.
import type { ExpectationResult, TurnOutcome } from '../sandbox/scenario-runner';
import { HYGIENE_CHECKS, type ReplyCheck } from './reply-checks';

/** What a figure needs of a try: its scenario, number, expectations, turns and reply checks. */
export interface AnsweredTry {
  scenario: string;
  try: number;
  expectations: ExpectationResult[];
  turns: TurnOutcome[];
  /** Absent in records written before the reply checks existed. */
  reply_checks?: ReplyCheck[];
}

/** One turn (or reply) a figure counts against: where, and why. */
export interface FigureCase {
  scenario: string;
  try: number;
  /** The turn's number as the expectations' labels give it: 1 for the first. */
  turn: number;
  why: string;
}

export interface RateFigure {
  /** The turns (or replies) that went wrong this way. */
  count: number;
  /** The turns (or replies) that could have. */
  of: number;
  /** count / of; null when nothing could have. */
  rate: number | null;
  cases: FigureCase[];
}

export interface AnswerFigures {
  /** Turns whose expectation is an answer (one reply, no escalation) that were handed to the team, of all such turns. */
  false_handover: RateFigure;
  /**
   * Turns that got a reply when none was expected, or whose reply missed a fact it must carry (`reply_includes`),
   * carried what it must not (`reply_excludes`) or left a job the talent named unanswered (the `named_subject` check),
   * of the turns that got a reply.
   */
  wrong_answer: RateFigure;
  /** Replies that failed a hygiene check (no_repeat, passage_on_subject, wording), of all replies; by check as well. */
  hygiene: RateFigure & { by_check: { check: string; failed: number }[] };
}

/** The expectations of each turn, by the turn's index: later turns' labels start "turn 2: ", "turn 3: "… */
function expectationsByTurn(expectations: ExpectationResult[]): Map<number, ExpectationResult[]> {
  const byTurn = new Map<number, ExpectationResult[]>();
  for (const e of expectations) {
    const match = /^turn (\d+): (.*)$/s.exec(e.expectation);
    const index = match ? Number(match[1]) - 1 : 0;
    const own = { ...e, expectation: match ? match[2]! : e.expectation };
    byTurn.set(index, [...(byTurn.get(index) ?? []), own]);
  }
  return byTurn;
}

/** What a turn's expectations say it should come to: one reply, none, or not stated; and whether it escalates. */
function expectedOutcome(expectations: ExpectationResult[]): { reply: boolean | null; escalates: boolean } {
  const replied = expectations.find((e) => e.expectation === 'replied');
  const escalation = expectations.find((e) => e.expectation === 'escalation_source');
  // The scenario runner states `replied` as "exactly one reply" or "no reply" (sandbox/scenario-runner.ts).
  const reply = replied === undefined ? null : replied.expected !== 'no reply';
  return { reply, escalates: escalation !== undefined && escalation.expected !== null };
}

const rate = (count: number, of: number) => (of ? count / of : null);

/** The three figures over every turn of every try. */
export function answerFigures(tries: AnsweredTry[]): AnswerFigures {
  const handover = { count: 0, of: 0, cases: [] as FigureCase[] };
  const wrong = { count: 0, of: 0, cases: [] as FigureCase[] };
  const hygiene = { count: 0, of: 0, cases: [] as FigureCase[] };
  const failedByCheck = new Map<string, number>(HYGIENE_CHECKS.map((c) => [c, 0]));
  for (const t of tries) {
    const byTurn = expectationsByTurn(t.expectations);
    const checks = t.reply_checks ?? [];
    t.turns.forEach((turn, index) => {
      const where = { scenario: t.scenario, try: t.try, turn: index + 1 };
      const expectations = byTurn.get(index) ?? [];
      const expected = expectedOutcome(expectations);
      if (expected.reply === true && !expected.escalates) {
        handover.of += 1;
        if (turn.handed_over) {
          handover.count += 1;
          handover.cases.push({ ...where, why: `handed over (Melvin Status ${turn.melvin_status ?? 'none'})` });
        }
      }
      if (turn.replies.length === 0) return;
      wrong.of += 1;
      const turnChecks = checks.filter((c) => c.turn === index);
      const reasons = [
        ...(expected.reply === false ? ['a reply where none was expected'] : []),
        ...expectations
          .filter((e) => !e.passed && /^reply_(?:includes|excludes) /.test(e.expectation))
          .map((e) => `${e.expectation} failed`),
        ...turnChecks.filter((c) => c.check === 'named_subject' && !c.passed).map((c) => c.detail),
      ];
      if (reasons.length) {
        wrong.count += 1;
        wrong.cases.push({ ...where, why: reasons.join('; ') });
      }
      // A try recorded before the reply checks existed has none to count.
      if (t.reply_checks === undefined) return;
      turn.replies.forEach((_, at) => {
        hygiene.of += 1;
        const failed = turnChecks.filter((c) => c.reply === at && !c.passed && HYGIENE_CHECKS.includes(c.check));
        if (!failed.length) return;
        hygiene.count += 1;
        for (const c of failed) failedByCheck.set(c.check, (failedByCheck.get(c.check) ?? 0) + 1);
        hygiene.cases.push({ ...where, why: failed.map((c) => `${c.check}: ${c.detail}`).join('; ') });
      });
    });
  }
  const figure = (f: typeof handover): RateFigure => ({ ...f, rate: rate(f.count, f.of) });
  return {
    false_handover: figure(handover),
    wrong_answer: figure(wrong),
    hygiene: {
      ...figure(hygiene),
      by_check: [...failedByCheck].map(([check, failed]) => ({ check, failed })),
    },
  };
}

/** The scenarios behind a figure, each with the tries it came from: "payment-processing (tries 1, 3)". */
export function scenariosBehind(cases: FigureCase[]): string[] {
  const tries = new Map<string, Set<number>>();
  for (const c of cases) tries.set(c.scenario, (tries.get(c.scenario) ?? new Set()).add(c.try));
  return [...tries].map(([scenario, numbers]) => {
    const sorted = [...numbers].sort((a, b) => a - b);
    return `${scenario} (tr${sorted.length === 1 ? 'y' : 'ies'} ${sorted.join(', ')})`;
  });
}
