// Coverage on its own: the judgement into the hop, and the route the coverage rule gives for every hop and verdict.
import fc from 'fast-check';
import { coverageFailed, routeCoverage } from '../../../src/workflows/nodes/coverage';
import { freshState } from './fixtures';

function stateAtHop(hop: number, maxHops: number) {
  const state = freshState(maxHops);
  for (let i = 0; i < hop; i++) state.hops.push({ plan: null, gather: null, coverage: null });
  return state;
}

test('any hop, any verdict: Draft when covered, another hop while hops last, else Draft on some or hand over', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 5 }),
      fc.integer({ min: 1, max: 5 }),
      fc.boolean(),
      fc.integer({ min: 0, max: 3 }),
      (hop, maxHops, sufficient, covered) => {
        const state = stateAtHop(hop, maxHops);
        const intents = Array.from({ length: 3 }, (_, i) => ({
          intent: `i${i}`,
          covered: i < covered,
          evidence: '',
        }));
        const step = routeCoverage({ state }, {
          data_sufficient: sufficient,
          missing_data: [],
          known_context: [],
          missing_context: [],
          intents,
        } as never);
        const expected = sufficient ? 'draft' : hop < maxHops ? 'plan' : covered > 0 ? 'draft' : 'escalate';
        expect(step.next).toBe(expected);
        expect(step.escalation?.kind).toBe(expected === 'escalate' ? 'hops_exhausted' : undefined);
        expect(state.hops.at(-1)!.coverage).toMatchObject({ data_sufficient: sufficient, next_node: expected });
        expect(state.hops.at(-1)!.coverage!.escalation_reason !== null).toBe(expected === 'escalate');
      },
    ),
  );
});

test('a coverage call that failed records the hop as not covered and hands over', () => {
  const state = stateAtHop(1, 2);
  const step = coverageFailed({ state }, new Error('model endpoint down'));
  expect(step).toMatchObject({ next: 'escalate', escalation: { kind: 'coverage_error', source: 'coverage' } });
  expect(state.error).toContain('model endpoint down');
  expect(state.hops[0]!.coverage).toMatchObject({ data_sufficient: false, next_node: 'escalate' });
});
