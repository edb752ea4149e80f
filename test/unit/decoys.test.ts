// Decoy records: every scenario's talent gets two closed records from well before the scenario, whose facts no reply
// may hold; checked over every scenario file the project has.
import path from 'node:path';
import { loadScenario, scenarioFiles } from '../../sandbox/scenario-runner';
import { Scenario } from '../../sandbox/scenario';
import { readFileSync } from 'node:fs';

const ROOT = path.join(__dirname, '../..');
const FILES = scenarioFiles(['scenarios/melvin', 'eval/scenarios', 'eval/holdout'].map((d) => path.join(ROOT, d)));

const talentOf = (s: Scenario) =>
  s.talent.users.find((u) => u.email.toLowerCase() === s.conversation.contact.email.toLowerCase());
const recordsOf = (s: Scenario) => {
  const t = talentOf(s);
  return t ? [...t.payments, ...t.applications] : [];
};
const dateOf = (r: Record<string, unknown>) => String(r.paid_at ?? r.expected_date ?? r.updated_at ?? '');

describe.each(FILES.map((f) => [path.relative(ROOT, f), f]))('%s', (_name, file) => {
  const original = Scenario.parse(JSON.parse(readFileSync(file, 'utf8')));
  const loaded = loadScenario(file);
  const before = recordsOf(original);
  const added = recordsOf(loaded).filter((r) => !before.some((b) => b.id === r.id));

  test('a talent with records gets two more, closed, half a year or more before any of theirs', () => {
    if (!before.length) return expect(added).toEqual([]);
    expect(added).toHaveLength(2);
    const earliest = before.map(dateOf).filter(Boolean).sort()[0];
    for (const r of added) {
      expect(['paid', 'withdrawn']).toContain(r.status);
      if (earliest) expect(Date.parse(earliest) - Date.parse(dateOf(r))).toBeGreaterThanOrEqual(182 * 86_400_000);
    }
  });

  test('every turn excludes their facts from the reply, and none of those is a fact of the scenario itself', () => {
    if (!added.length) return;
    const text = JSON.stringify(original).toLowerCase();
    const jobs = loaded.talent.jobs.filter((j) => added.some((r) => r.job_id === j.id));
    const facts = [
      ...added.flatMap((r) => ('amount' in r ? [`$${r.amount}`] : [])),
      ...jobs.map((j) => j.title),
      ...added.map(dateOf),
    ];
    for (const expect_ of [loaded.expect, ...loaded.turns.flatMap((t) => (t.expect ? [t.expect] : []))]) {
      expect(expect_.reply_excludes).toEqual(expect.arrayContaining(facts));
    }
    const excluded = loaded.expect.reply_excludes!.filter((e) => !original.expect.reply_excludes?.includes(e));
    expect(excluded.filter((e) => text.includes(e.toLowerCase()))).toEqual([]);
  });

  test('the same decoys on every load', () => {
    expect(loadScenario(file)).toEqual(loaded);
  });
});
