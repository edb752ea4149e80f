// The resolved-conversation index's pure parts: redaction (what is removed, and what must stay), seed 002's ranking
// (as properties over generated candidates), and which messages of a conversation are indexed with which pairs.
import fc from 'fast-check';
import { indexedMessages, type ConversationPart } from '../../src/resolved-index/examples';
import {
  BOOST_RECENCY_MAX,
  BOOST_SAME_STAGE,
  BOOST_SAME_THREAD,
  BOOST_TEAM_ROLE,
  fewShotPairs,
  rank,
  score,
  type Candidate,
  type RankingQuery,
} from '../../src/resolved-index/ranking';
import { maskUnshared, namingTokens, redact } from '../../src/resolved-index/redact';
import { STAGES } from '../../src/contract/vocabulary';

describe('redact', () => {
  const contact = { contactName: 'Maya Chen', contactEmail: 'maya.chen@example.com' };
  test.each([
    ['an email', 'Write to maya.chen+pay@example.co.uk today', 'Write to [email] today'],
    ['an international phone', 'Call +1 (415) 555-0134 after 5', 'Call [phone] after 5'],
    ['a dotted phone', 'my number is 020.7946.0018', 'my number is [phone]'],
    ['a URL with an id', 'see https://app.example.com/payouts/8812345?tab=1 now', 'see [link] now'],
    ['a URL with a uuid', 'https://x.io/t/3f2b9c1e-1a2b-4c3d-8e9f-001122334455', '[link]'],
    ['a card-like digit run', 'account 12345678 was charged', 'account [number] was charged'],
    ['an internal id', 'your application app-51 moved', 'your application [id] moved'],
    ['the contact’s name, any case', 'Hi MAYA, thanks Chen!', 'Hi [name], thanks [name]!'],
    ['the email’s local part on its own', 'user maya.chen asked', 'user [name] asked'],
    ['an amount in dollars', 'We paid $150.00 in 3 days', 'We paid [amount] in 3 days'],
    ['an amount with its code after', 'it was 1,250 USD, not 1.250,00 EUR', 'it was [amount], not [amount]'],
    ['an amount in euros and pounds', '€40 and £1,200.50 went out', '[amount] and [amount] went out'],
  ])('removes %s', (_what, text, expected) => {
    expect(redact(text, contact)).toBe(expected);
  });

  test.each([
    ['a date', 'It lands on 2026-11-27, or 27.11.2026'],
    ['a short count', 'We paid it in 3 days, 2 of them weekend'],
    ['a year and a form', 'Your 2025 W-2 and Form 1099-NEC are ready'],
    ['a help-center URL without ids', 'Read https://help.example.com/articles/payouts first'],
    ['a word that holds the name', 'Mayan art, Chenille and Mayday'],
    ['a time', 'Call us 9-5, shift 10:30 to 18:00'],
  ])('keeps %s', (_what, text) => {
    expect(redact(text, contact)).toBe(text);
  });

  test('without a known contact, names are left and every other rule still applies', () => {
    expect(redact('Maya: 555 013 4455, maya@x.io')).toBe('Maya: [phone], [email]');
  });
});

describe('maskUnshared', () => {
  // What one talent's conversation may name: people, employers, places, streets and links, in any script.
  const capitalized = fc
    .tuple(fc.constantFrom('A', 'B', 'K', 'M', 'Z', 'Ö', 'Ł', 'É'), fc.stringMatching(/^[a-zà-ÿ]{2,9}$/))
    .map(([first, rest]) => first + rest);
  const naming = fc.oneof(
    capitalized,
    fc.tuple(capitalized, capitalized).map(([a, b]) => `${a} ${b}`),
    fc.tuple(fc.integer({ min: 1, max: 999 }), capitalized).map(([n, street]) => `${n} ${street} Street`),
    fc.webUrl({ withQueryParameters: true }),
    capitalized.map((word) => `${word.toUpperCase()} Inc`),
  );
  const sentence = fc.tuple(
    fc.constantFrom('Howdy! Your supervisor', 'Sorry, we asked', 'thanks, i called', 'Hey there. Your payout from'),
    naming,
    fc.constantFrom('and it lands Friday.', 'about the shift.', '— The Maple Crew'),
  );

  test('a naming word or link the team did not use with several talents never survives; shared words do', () => {
    fc.assert(
      fc.property(sentence, ([before, named, after]) => {
        const text = `${before} ${named} ${after}`;
        const shared = new Set(namingTokens(`${before} ${after}`));
        const masked = maskUnshared(text, shared);
        const left = namingTokens(masked);
        for (const token of namingTokens(named).filter((t) => !shared.has(t))) expect(left).not.toContain(token);
        // What the team says to everyone stays word for word: the greeting, the lower-case words, the sign-off.
        expect(maskUnshared(`${before} ${after}`, shared)).toBe(`${before} ${after}`);
      }),
      { numRuns: 300 },
    );
  });

  test('lower-case words, placeholders and numbers are the language: never masked', () => {
    const text = 'it lands on the 27th, in 3 days; [name] said [amount] and see [link]';
    expect(maskUnshared(text, new Set())).toBe(text);
    expect(maskUnshared('Ask Ivo Petrov at https://ivo.example/portfolio', new Set(['Ask']))).toBe(
      'Ask [name] [name] at [link]',
    );
  });
});

const stage = fc.option(fc.constantFrom(...STAGES), { nil: null });
const candidate: fc.Arbitrary<Candidate> = fc.record({
  conversation_id: fc.constantFrom('1', '2', '3'),
  part_id: fc.integer({ min: 1, max: 40 }).map(String),
  role: fc.constantFrom('talent' as const, 'team' as const),
  text: fc.constant('t'),
  question: fc.constantFrom('q1', 'q2', ''),
  answer: fc.constantFrom('a1', 'a2'),
  stage,
  written_at: fc
    .integer({ min: 0, max: 400 })
    .map((d) => new Date(Date.UTC(2026, 10, 27) - d * 86_400_000).toISOString()),
  similarity: fc.double({ min: -1, max: 1, noNaN: true }),
});
const query = fc.record({
  conversationId: fc.option(fc.constantFrom('1', '2', '9'), { nil: null }),
  stage,
  now: fc.constant('2026-11-27T00:00:00.000Z'),
});

describe('rank', () => {
  test('returns at most k messages, each once, best first', () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 60 }), query, fc.integer({ min: 0, max: 12 }), (cs, q, k) => {
        const ranked = rank(cs, q, k);
        const keys = ranked.map((r) => `${r.conversation_id}/${r.part_id}`);
        expect(ranked.length).toBeLessThanOrEqual(k);
        expect(new Set(keys).size).toBe(keys.length);
        for (let i = 1; i < ranked.length; i++) expect(ranked[i - 1]!.score).toBeGreaterThanOrEqual(ranked[i]!.score);
      }),
    );
  });

  test('at equal similarity and age, a message with a boost the other lacks ranks above it, never below', () => {
    fc.assert(
      fc.property(candidate, query, fc.constantFrom('thread', 'stage', 'role'), (base, generated, boost) => {
        const q: RankingQuery = { ...generated, conversationId: boost === 'thread' ? 'z' : null };
        // The boosted one would lose the tie-break (conversation order) without its boost.
        const plain: Candidate = { ...base, part_id: 'p', conversation_id: 'a', role: 'talent', stage: null };
        const withBoost: Candidate = { ...plain, part_id: 'b', conversation_id: 'z' };
        if (boost === 'stage') {
          withBoost.stage = 'applied';
          q.stage = 'applied';
        } else if (q.stage === 'applied') q.stage = null;
        if (boost === 'role') withBoost.role = 'team';
        const [first] = rank([plain, withBoost], q, 2);
        expect(first!.part_id).toBe('b');
      }),
    );
  });

  test('equal scores keep one order whatever order the candidates came in', () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 20 }), query, (cs, q) => {
        // One row per (conversation, part), as the store's primary key keeps it.
        const same = cs.map((c, i) => ({
          ...c,
          part_id: String(i),
          similarity: 0.5,
          role: 'team' as const,
          stage: null,
          written_at: q.now,
        }));
        expect(rank([...same].reverse(), q, 20)).toEqual(rank(same, q, 20));
      }),
    );
  });

  test('the boosts are seed 002’s, and recency is at most 0.02 and halves in 30 days', () => {
    const c: Candidate = {
      conversation_id: '1',
      part_id: '1',
      role: 'team',
      text: 't',
      question: 'q',
      answer: 'a',
      stage: 'applied',
      written_at: '2026-10-28T00:00:00.000Z',
      similarity: 0.5,
    };
    const s = score(c, { conversationId: '1', stage: 'applied', now: '2026-11-27T00:00:00.000Z' });
    expect(s.boosts).toEqual({
      thread: BOOST_SAME_THREAD,
      stage: BOOST_SAME_STAGE,
      role: BOOST_TEAM_ROLE,
      recency: BOOST_RECENCY_MAX / 2,
    });
    expect(s.score).toBeCloseTo(0.5 + 0.2 + 0.08 + 0.05 + 0.01, 10);
    expect(score(c, { conversationId: null, stage: null, now: c.written_at }).boosts.recency).toBe(BOOST_RECENCY_MAX);
  });

  test('a message found by both searches is one candidate, with its better similarity', () => {
    const c: Candidate = { ...fc.sample(candidate, 1)[0]!, similarity: 0.2 };
    const ranked = rank([c, { ...c, similarity: 0.6 }], { conversationId: null, stage: null, now: c.written_at });
    expect(ranked).toHaveLength(1);
    expect(ranked[0]!.similarity).toBe(0.6);
  });
});

test('few-shot pairs: the first one or two distinct question→answer pairs; an answer alone is one too', () => {
  const q = { conversationId: null, stage: null, now: '2026-11-27T00:00:00.000Z' };
  const base = { text: 't', stage: null, written_at: q.now, role: 'team' as const };
  const ranked = rank(
    [
      { ...base, conversation_id: '1', part_id: '1', question: '', answer: 'hello', similarity: 0.9 },
      { ...base, conversation_id: '1', part_id: '2', question: 'q1', answer: 'a1', similarity: 0.8 },
      { ...base, conversation_id: '1', part_id: '3', question: 'q1', answer: 'a1', similarity: 0.7 },
      { ...base, conversation_id: '2', part_id: '1', question: 'q2', answer: 'a2', similarity: 0.6 },
      { ...base, conversation_id: '3', part_id: '1', question: 'q3', answer: 'a3', similarity: 0.5 },
    ],
    q,
  );
  expect(fewShotPairs(ranked)).toEqual([
    { question: '', answer: 'hello' },
    { question: 'q1', answer: 'a1' },
  ]);
  expect(fewShotPairs(ranked, 3)).toEqual([
    { question: '', answer: 'hello' },
    { question: 'q1', answer: 'a1' },
    { question: 'q2', answer: 'a2' },
  ]);
});

test('indexed messages: the teammates’ replies only, redacted, each found by the talent’s words it answered; none of those words kept', () => {
  const talent = { type: 'user', id: 'c1', name: 'Maya Chen', email: 'maya@example.com' };
  const teammate = { type: 'admin', id: '990001', name: 'Sam' };
  const melvin = { type: 'admin', id: '8918000', name: 'Melvin' };
  const part = (
    id: string,
    author: ConversationPart['author'],
    body: string,
    part_type = 'comment',
  ): ConversationPart => ({
    id,
    part_type,
    body,
    created_at: 1_800_000_000 + Number(id),
    author,
  });
  const messages = indexedMessages(
    [
      part('1', talent, 'Hi, I am Maya. When is my payout? My boss Ivo Petrov at Acme asked too', 'conversation'),
      part('2', melvin, 'Let me check that.'),
      part('3', talent, 'It is for pay-61'),
      part('4', teammate, 'Internal: VIP', 'note'),
      part('5', teammate, 'Howdy! It lands Friday.\n— The Crew'),
      part('6', null, 'event', 'close'),
      part('7', teammate, 'Anything else?'),
      part('8', talent, 'Thanks, bye'),
    ],
    '8918000',
  );
  expect(messages.map((m) => [m.part_id, m.role, m.text, m.question, m.answer])).toEqual([
    ['5', 'team', 'Howdy! It lands Friday.\n— The Crew', '', 'Howdy! It lands Friday.\n— The Crew'],
    ['7', 'team', 'Anything else?', '', 'Anything else?'],
  ]);
  expect(messages[0]!.search_text).toBe(
    'Hi, I am [name]. When is my payout? My boss Ivo Petrov at Acme asked too\nIt is for [id]\nHowdy! It lands Friday.\n— The Crew',
  );
  expect(messages[1]!.search_text).toBe('Anything else?');
  // Who the talent is, only as a hash, the same for each of their replies.
  expect(messages[0]!.talent).toMatch(/^[0-9a-f]{32}$/);
  expect(messages[1]!.talent).toBe(messages[0]!.talent);
  const kept = JSON.stringify(messages.map(({ search_text: _embeddedOnly, ...stored }) => stored));
  for (const word of ['Ivo', 'Acme', 'payout', 'bye', 'c1', 'maya']) expect(kept).not.toContain(word);
});
