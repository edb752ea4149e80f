// Facts of two records in one sentence: "your $228 payment is expected December 4" when the $228 payment is due
// November 27 and December 4 is another payment's date. Each fact is in the data, so the grounding check passes it; read
// together, one of them belongs to another record. Pure; ./grounding runs it.

/**
 * A record's facts: its dates (month-day), amounts, and the names it holds (a title, a place), lower case; and which
 * list it is of. Only records of one list (two payments, two applications) can be taken for each other: a payment and
 * the job it was for are told together.
 */
export interface RecordFacts {
  list: number;
  dates: Set<string>;
  amounts: Set<number>;
  names: Set<string>;
}

/** A fact of a sentence, as the sentence wrote it, where, and in the form records are compared in. */
export interface SentenceFact {
  text: string;
  at: number;
  key: { date: string } | { amount: number } | { name: string };
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})/;
/** A value that reads as a name: a title or a place ("Event Staff", "Milwaukee, WI"), not a status or a code. */
const NAME_LIKE = /^\p{Lu}[\p{L}\p{M} ,.'’&/-]{1,60}$/u;

function factsOfValue(value: unknown, into: RecordFacts): void {
  if (typeof value === 'number') into.amounts.add(value);
  else if (typeof value === 'string') {
    const iso = ISO_DATE.exec(value);
    if (iso) into.dates.add(`${Number(iso[2])}-${Number(iso[3])}`);
    for (const m of value.matchAll(/\d+(?:\.\d+)?/g)) if (!iso) into.amounts.add(Number(m[0]));
    if (NAME_LIKE.test(value) && value !== value.toUpperCase()) into.names.add(value.toLowerCase());
  } else if (value && typeof value === 'object' && !Array.isArray(value)) {
    // A job inside an application is the application's: its title is the application's title.
    for (const v of Object.values(value)) factsOfValue(v, into);
  }
}

/**
 * The records of the data: every object in a list (a payment, an application), and an object that holds no list (a
 * job's details). The containers above them are not records: all of a talent's payments are not one record.
 */
export function recordsOf(data: unknown, into: RecordFacts[] = []): RecordFacts[] {
  const record = (value: object, list: number) => {
    const facts: RecordFacts = { list, dates: new Set(), amounts: new Set(), names: new Set() };
    factsOfValue(value, facts);
    into.push(facts);
  };
  const walk = (value: unknown) => {
    if (Array.isArray(value)) {
      const list = lists++;
      for (const item of value) {
        if (item && typeof item === 'object' && !Array.isArray(item)) record(item, list);
        walk(item);
      }
    } else if (value && typeof value === 'object') {
      const values = Object.values(value);
      // A record has facts of its own; a wrapper around one object ({ data: {…} }) is not one.
      const own = values.filter((v) => v === null || typeof v !== 'object');
      if (holdsList(value) || own.length < 2) values.forEach(walk);
      else record(value, lists++);
    }
  };
  let lists = 0;
  walk(data);
  return into;
}

/** Whether a list sits anywhere inside a value: a container of records, not a record. */
function holdsList(value: unknown): boolean {
  if (Array.isArray(value)) return true;
  return value !== null && typeof value === 'object' && Object.values(value).some(holdsList);
}

const holds = (record: RecordFacts, fact: SentenceFact) =>
  'date' in fact.key
    ? record.dates.has(fact.key.date)
    : 'amount' in fact.key
      ? record.amounts.has(fact.key.amount)
      : record.names.has(fact.key.name);

/**
 * The facts of one sentence told of a record they are not of. Read in order, the sentence's facts of one list (the
 * talent's payments, say) fall into runs that one record holds: "your $228 payment is expected November 27, and your
 * $140 one December 4" is two runs of two facts, one record each. A run of one fact beside a run of two or more is a
 * fact slipped in from another record: "your payment of $180 for Event Staff is expected November 27" when $180 was
 * another Event Staff payment's (which run a swapped fact lands in depends on the order; either way the sentence mixes
 * two records). Runs of single facts of one kind are a list ("your $228 and $140 payments"); of two kinds they are two
 * records' facts told as one ("your $228 payment is expected December 4"). A fact no record of the list holds is left
 * to the grounding check.
 */
export function mixedFacts(facts: SentenceFact[], records: RecordFacts[]): SentenceFact[] {
  // One record that holds every fact the records hold (a job, its title and start date) is what the sentence is about.
  const held = facts.filter((fact) => records.some((r) => holds(r, fact)));
  if (records.some((r) => held.every((fact) => holds(r, fact)))) return [];
  const lists = [...new Set(records.map((r) => r.list))];
  return lists.flatMap((list) => {
    const ofList = records.filter((r) => r.list === list);
    const inOrder = facts
      .map((fact) => ({ fact, owners: ofList.filter((r) => holds(r, fact)) }))
      .filter((f) => f.owners.length > 0)
      .sort((a, b) => a.fact.at - b.fact.at);
    const runs: { facts: SentenceFact[]; owners: RecordFacts[] }[] = [];
    for (const { fact, owners } of inOrder) {
      const last = runs.at(-1);
      const shared = last?.owners.filter((r) => owners.includes(r)) ?? [];
      if (last && shared.length) {
        last.facts.push(fact);
        last.owners = shared;
      } else runs.push({ facts: [fact], owners });
    }
    const single = runs.filter((run) => run.facts.length === 1).map((run) => run.facts[0]!);
    const kinds = new Set(single.map((fact) => Object.keys(fact.key)[0]));
    if (runs.length < 2 || (single.length === runs.length && kinds.size === 1)) return [];
    return single;
  });
}

/** The names of records that a sentence writes (case apart), each with how the sentence wrote it. */
export function namesIn(sentence: string, records: RecordFacts[]): SentenceFact[] {
  const lower = sentence.toLowerCase();
  const names = new Set(records.flatMap((r) => [...r.names]));
  return [...names]
    .filter((name) => lower.includes(name))
    .map((name) => {
      const at = lower.indexOf(name);
      return { text: sentence.slice(at, at + name.length), at, key: { name } };
    });
}

/**
 * What a sentence says a date is, from the words just before it, and the data fields that hold such a date: "expected
 * on November 27" is an expected date, "paid on" a paid one, "last updated" an update, "starts" a start. Words that say
 * none of these (a deadline "by", "on") leave the date to the other checks.
 */
const DATE_ROLES: { said: RegExp; field: RegExp; role: string }[] = [
  {
    said: /\b(?:expected|due|arriv\w*|coming|lands?|landing|scheduled|on its way)\b[\w\s,]{0,12}$/i,
    field: /expect|due|arriv|schedul|estimat/i,
    role: 'an expected date',
  },
  {
    said: /\b(?:paid|deposited|transferred|went out|sent)\b[\w\s,]{0,12}$/i,
    field: /paid|deposit|sent|settl/i,
    role: 'a paid date',
  },
  { said: /\b(?:updated|changed)\b[\w\s,]{0,6}$/i, field: /updat|modif|chang/i, role: 'an update' },
  { said: /\b(?:starts?|starting|begins?|first day)\b[\w\s,]{0,12}$/i, field: /start|begin/i, role: 'a start date' },
];

/** Each date of the data (month-day) with the names of the fields that hold it. */
export function dateFields(data: unknown, into = new Map<string, string[]>()): Map<string, string[]> {
  if (Array.isArray(data)) data.forEach((v) => dateFields(v, into));
  else if (data && typeof data === 'object') {
    for (const [key, value] of Object.entries(data)) {
      const iso = typeof value === 'string' ? ISO_DATE.exec(value) : null;
      if (iso) {
        const day = `${Number(iso[2])}-${Number(iso[3])}`;
        into.set(day, [...(into.get(day) ?? []), key]);
      } else dateFields(value, into);
    }
  }
  return into;
}

/**
 * Dates a sentence calls one thing ("expected on October 31") that the data holds only as another (October 31 is when
 * an application was updated): another record's date, told as this one's.
 */
export function misreadDates(sentence: string, dates: SentenceFact[], fields: Map<string, string[]>): SentenceFact[] {
  return dates.filter((date) => {
    if (!('date' in date.key)) return false;
    const held = fields.get(date.key.date);
    if (!held) return false;
    const role = DATE_ROLES.find((r) => r.said.test(sentence.slice(0, date.at)));
    return role !== undefined && !held.some((field) => role.field.test(field));
  });
}
