// The reliability suite's representative subset (the full suite is `npm run reliability`): a worker killed mid-run,
// fuzzed bad input, and the prompt-injection set. Each experiment's checks must all hold.
import { badInput } from '../../reliability/bad-input';
import { workerCrash } from '../../reliability/faults';
import { promptInjection } from '../../reliability/injection';
import type { Report } from '../../harness/report';

beforeAll(() => {
  process.env.LOG_LEVEL = 'warn';
});

/** Every check of the report, shown with the figures when one fails. */
function expectAllChecksHold(report: Report): void {
  const failed = report.checks.filter((c) => !c.passed);
  expect({ failed, figures: failed.length ? report.figures : [] }).toEqual({ failed: [], figures: [] });
  expect(report.checks.length).toBeGreaterThan(1);
}

test('a worker killed with SIGKILL during a model call, a tool call and a reply: every run ends right, nothing twice', async () => {
  const report = await workerCrash({ conversations: 4, kills: 3 });
  expectAllChecksHold(report);
  expect(report.figures).toContainEqual(['runs completed / started', '4 / 4']);
}, 300_000);

test('200 fuzzed ingress deliveries and 50 fuzzed model outputs: right answers, no crash, no run from bad input', async () => {
  expectAllChecksHold(await badInput({ ingressCases: 200, modelCases: 50 }));
}, 300_000);

test('prompt injection against a model that obeys everything: no leak, every tool call scoped', async () => {
  const report = await promptInjection();
  expectAllChecksHold(report);
  expect(report.figures).toContainEqual(['attack conversations', 18]);
}, 300_000);
