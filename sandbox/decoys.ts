// Two more records for every scenario's talent, and their facts kept out of every reply: a reply about the wrong record
// fails the scenario, which it cannot when the talent has only the one record asked about (issue 39, item 4).
import type { Scenario } from './scenario';

/**
 * Closed jobs from long ago that no scenario speaks of. A title or place whose words the scenario already uses is
 * skipped, so a talent's own words never name a decoy ("the ferry shift" would).
 */
const TITLES = [
  'Ferry Deckhand',
  'Planetarium Usher',
  'Ice Rink Attendant',
  'Orchard Picker',
  'Ski Lift Operator',
  'Aquarium Greeter',
  'Regatta Marshal',
  'Lighthouse Docent',
];
const PLACES = [
  'Duluth, MN',
  'Flagstaff, AZ',
  'Bangor, ME',
  'Missoula, MT',
  'Dubuque, IA',
  'Laramie, WY',
  'Eureka, CA',
];
const DAY_MS = 86_400_000;
/** "2025-04-21" as a reply writes it: "April 21". */
const spokenDay = (iso: string) =>
  new Date(`${iso}T00:00:00Z`).toLocaleDateString('en-US', { month: 'long', day: 'numeric', timeZone: 'UTC' });
const isoDay = (t: number) => new Date(t).toISOString().slice(0, 10);

/** A small deterministic generator, so a scenario's decoys are the same on every run. */
function generator(seed: string): () => number {
  let h = 2166136261;
  for (const c of seed) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  return () => {
    h = (Math.imul(h ^ (h >>> 15), 2246822507) + 0x9e3779b9) >>> 0;
    return h / 2 ** 32;
  };
}

/** What a reply must not hold of one decoy record: its amount, date, title and place, as a reply would write them. */
function factsOf(record: { amount?: number; date: string; title: string; place: string; ids: string[] }): string[] {
  const [year, month, day] = record.date.split('-').map(Number) as [number, number, number];
  const spoken = spokenDay(record.date);
  return [
    ...(record.amount === undefined ? [] : [`$${record.amount}`, `${record.amount} USD`]),
    spoken,
    `${spoken.slice(0, 3)} ${day}`,
    record.date,
    `${month}/${day}/${year}`,
    record.title,
    record.place.split(',')[0]!,
    ...record.ids,
  ];
}

/**
 * The scenario with two closed records from well before its own added to the talent of the conversation, one of
 * each kind the talent has (two of the one kind they have), and their facts added to every turn's `reply_excludes`. A
 * talent with no records of their own gets none: a decoy would then be the only thing to answer with. Which
 * record a question means is the agent's to tell: the decoys are closed, 200 to 500 days older than the scenario's
 * dates, and of jobs the talent never names.
 */
export function withDecoyRecords(scenario: Scenario): Scenario {
  const users = scenario.talent.users;
  const talent = users.find((u) => u.email.toLowerCase() === scenario.conversation.contact.email.toLowerCase());
  if (!talent || (!talent.payments.length && !talent.applications.length)) return scenario;
  const text = JSON.stringify(scenario).toLowerCase();
  const used = new Set(text.match(/[a-z]+/g));
  const unused = (s: string) => !(s.toLowerCase().match(/[a-z]{3,}/g) ?? []).some((w) => used.has(w));
  const next = generator(scenario.id);
  const pick = <T>(from: T[], fits: (t: T) => boolean): T[] => {
    const start = Math.floor(next() * from.length);
    return [...from.slice(start), ...from.slice(0, start)].filter(fits);
  };
  // Every list keeps a fallback, so a scenario that happens to use every word still gets its decoys.
  const titles = [...pick(TITLES, unused), ...TITLES];
  const places = [...pick(PLACES, unused), ...PLACES];
  const dates = (text.match(/\d{4}-\d{2}-\d{2}/g) ?? []).sort();
  const earliest = Date.parse(dates[0] ?? '2026-01-01');
  // A month and day the scenario's own dates have would be excluded from a reply that rightly names one of them.
  const monthDays = new Set(dates.map((d) => d.slice(5)));
  const kinds: ('payment' | 'application')[] =
    talent.payments.length && talent.applications.length
      ? ['payment', 'application']
      : talent.payments.length
        ? ['payment', 'payment']
        : ['application', 'application'];

  const excludes: string[] = [];
  const jobs = [...scenario.talent.jobs];
  const payments = [...talent.payments];
  const applications = [...talent.applications];
  kinds.forEach((kind, i) => {
    const title = titles[i]!;
    const place = places[i]!;
    // Closed 200 to 500 days before the scenario's earliest date, on a day of the month past the 9th (so "March 1"
    // is not read inside "March 12") that none of its dates has.
    let at = earliest - (200 + Math.floor(next() * 300)) * DAY_MS;
    const taken = (day: string) =>
      Number(day.slice(8)) < 10 ||
      monthDays.has(day.slice(5)) ||
      [spokenDay(day), `${spokenDay(day).slice(0, 3)} ${Number(day.slice(8))}`].some((d) =>
        text.includes(d.toLowerCase()),
      );
    while (taken(isoDay(at))) at -= DAY_MS;
    const date = isoDay(at);
    monthDays.add(date.slice(5));
    let amount = 300 + Math.floor(next() * 600);
    while (text.includes(String(amount))) amount += 7;
    const jobId = `job-old-${i + 1}`;
    jobs.push({ id: jobId, title, location: place, status: 'closed' });
    const id = `${kind === 'payment' ? 'pay' : 'app'}-old-${i + 1}`;
    if (kind === 'payment')
      payments.push({ id, job_id: jobId, amount, currency: 'USD', status: 'paid', paid_at: date });
    else applications.push({ id, job_id: jobId, status: 'withdrawn', updated_at: date, applied_at: date });
    excludes.push(
      ...factsOf({ amount: kind === 'payment' ? amount : undefined, date, title, place, ids: [id, jobId] }),
    );
  });

  const exclude = <E extends { reply_excludes?: string[] }>(expect: E): E => ({
    ...expect,
    reply_excludes: [...(expect.reply_excludes ?? []), ...excludes],
  });
  return {
    ...scenario,
    talent: {
      ...scenario.talent,
      users: users.map((u) => (u === talent ? { ...talent, payments, applications } : u)),
      jobs,
    },
    expect: exclude(scenario.expect),
    turns: scenario.turns.map((turn) => (turn.expect ? { ...turn, expect: exclude(turn.expect) } : turn)),
  };
}
