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

/** A fact of a sentence, as the sentence wrote it and in the form records are compared in. */
export interface SentenceFact {
  text: string;
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
 * The facts of one sentence that belong only to records holding none of the sentence's other facts of their list: in
 * "your $228 payment is expected December 4", December 4 when no payment holds both. A fact no record holds (a
 * help-center figure) is left to the grounding check; a sentence of one fact has nothing to be mixed with.
 */
export function mixedFacts(facts: SentenceFact[], records: RecordFacts[]): SentenceFact[] {
  if (facts.length < 2) return [];
  return facts.filter((fact) => {
    const owners = records.filter((r) => holds(r, fact));
    // The sentence's other facts that a record of the same list holds: those this fact could be mixed up with.
    const siblings = facts.filter(
      (f) => f !== fact && records.some((r) => holds(r, f) && owners.some((o) => o.list === r.list)),
    );
    return siblings.length > 0 && !owners.some((r) => siblings.some((f) => holds(r, f)));
  });
}

/** The names of records that a sentence writes (case apart), each with how the sentence wrote it. */
export function namesIn(sentence: string, records: RecordFacts[]): SentenceFact[] {
  const lower = sentence.toLowerCase();
  const names = new Set(records.flatMap((r) => [...r.names]));
  return [...names]
    .filter((name) => lower.includes(name))
    .map((name) => ({ text: sentence.slice(lower.indexOf(name), lower.indexOf(name) + name.length), key: { name } }));
}
