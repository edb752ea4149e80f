// The emulator's conversation search over HTTP, as Intercom's API 2.14 describes it: operators, nesting, pagination,
// the response shape and the errors of bad queries; and the official SDK's search request accepted as it is sent.
import { IntercomClient } from 'intercom-client';
import { IntercomEmulator } from '../../sandbox/intercom/emulator';

const TOKEN = 'search-token';
let emulator: IntercomEmulator;
let url: string;

beforeAll(async () => {
  emulator = new IntercomEmulator({ token: TOKEN, adminId: '8918000', webhook: undefined });
  url = await emulator.start();
  for (let i = 0; i < 7; i++) {
    emulator.seed({
      id: String(8100 + i),
      contact: { id: `c-${8100 + i}`, email: `t${i}@example.com`, name: `Talent ${i}` },
      parts: [{ author: 'user', type: 'comment', body: `Question ${i}` }],
    });
  }
  // Closing emits a webhook; with no receiver configured the emulator would throw, so close by hand as Intercom would.
  for (const id of ['8101', '8103', '8105']) {
    const c = emulator.mustGet(id);
    Object.assign(c, { state: 'closed', open: false });
    Object.assign(c.statistics, { first_close_at: 1_800_000_000, last_close_at: 1_800_000_000 + Number(id) });
  }
});

afterAll(() => emulator.stop());

async function search(body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/conversations/search`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the tests read whatever the emulator answered
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

const ids = (body: Record<string, unknown>) => (body.conversations as { id: string }[]).map((c) => c.id);

test('a single filter on state finds the closed conversations, in the conversation.list shape without parts', async () => {
  const { status, body } = await search({ query: { field: 'state', operator: '=', value: 'closed' } });
  expect(status).toBe(200);
  expect(body).toMatchObject({
    type: 'conversation.list',
    total_count: 3,
    pages: { type: 'pages', page: 1, per_page: 20 },
  });
  expect(ids(body)).toEqual(['8101', '8103', '8105']);
  expect(body.pages.next).toBeUndefined();
  expect(body.conversations[0].conversation_parts).toBeUndefined();
  expect(body.conversations[0].statistics.last_close_at).toBe(1_800_008_101);
});

test('AND and OR nest; dates compare as UNIX timestamps, sent as numbers or digit strings; > and < include the bound', async () => {
  const window = (from: number | string) => ({
    operator: 'AND',
    value: [
      { field: 'state', operator: '=', value: 'closed' },
      { field: 'statistics.last_close_at', operator: '>', value: from },
      { field: 'statistics.last_close_at', operator: '<', value: 1_800_008_105 },
    ],
  });
  expect(ids((await search({ query: window(1_800_008_103) })).body)).toEqual(['8103', '8105']);
  expect(ids((await search({ query: window('1800008104') })).body)).toEqual(['8105']);
  const either = {
    operator: 'OR',
    value: [
      { field: 'id', operator: 'IN', value: ['8100', '8102'] },
      { operator: 'AND', value: [{ field: 'contact_ids', operator: '=', value: 'c-8106' }] },
    ],
  };
  expect(ids((await search({ query: either })).body)).toEqual(['8100', '8102', '8106']);
  const strings = { field: 'source.author.email', operator: '$', value: '5@EXAMPLE.com' };
  expect(ids((await search({ query: strings })).body)).toEqual(['8105']);
  const not = { field: 'state', operator: '!=', value: 'closed' };
  expect(ids((await search({ query: not })).body)).toEqual(['8100', '8102', '8104', '8106']);
});

test('pages follow starting_after until no next cursor, with total_count and total_pages', async () => {
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const { body } = await search({
      query: { field: 'created_at', operator: '>', value: 0 },
      pagination: { per_page: 3, ...(cursor ? { starting_after: cursor } : {}) },
    });
    expect(body).toMatchObject({ total_count: 7, pages: { per_page: 3, total_pages: 3, page: pages + 1 } });
    seen.push(...ids(body));
    cursor = body.pages.next?.starting_after;
    pages += 1;
  } while (cursor);
  expect(pages).toBe(3);
  expect(seen).toEqual(['8100', '8101', '8102', '8103', '8104', '8105', '8106']);
});

test.each([
  ['no query', { pagination: { per_page: 5 } }, 'query is required'],
  [
    'per_page over 150',
    { query: { field: 'state', operator: '=', value: 'open' }, pagination: { per_page: 151 } },
    'per_page',
  ],
  ['an unknown field', { query: { field: 'mood', operator: '=', value: 'x' } }, 'mood is not a searchable field'],
  ['!= on a date', { query: { field: 'updated_at', operator: '!=', value: 1 } }, 'not supported'],
  ['> on a string', { query: { field: 'state', operator: '>', value: 'a' } }, 'not supported'],
  ['a word for a date', { query: { field: 'created_at', operator: '>', value: 'foorbar' } }, 'UNIX timestamp'],
  ['IN without an array', { query: { field: 'id', operator: 'IN', value: '1' } }, 'array'],
  [
    'three levels of nesting',
    {
      query: {
        operator: 'AND',
        value: [{ operator: 'OR', value: [{ operator: 'AND', value: [{ field: 'id', operator: '=', value: '1' }] }] }],
      },
    },
    'Nesting limit',
  ],
  [
    '16 filters in a group',
    {
      query: {
        operator: 'OR',
        value: Array.from({ length: 16 }, (_, i) => ({ field: 'id', operator: '=', value: `${i}` })),
      },
    },
    'at most 15',
  ],
  [
    'a cursor not from a page',
    { query: { field: 'id', operator: '=', value: '1' }, pagination: { starting_after: 'zz' } },
    'cursor',
  ],
])('%s is refused with 400 parameter_invalid in an error.list', async (_name, body, words) => {
  const response = await search(body);
  expect(response.status).toBe(400);
  expect(response.body).toMatchObject({ type: 'error.list', errors: [{ code: 'parameter_invalid' }] });
  expect(response.body.errors[0].message).toContain(words);
});

test('without the token the search is 401, as every endpoint', async () => {
  const response = await search(
    { query: { field: 'state', operator: '=', value: 'closed' } },
    { authorization: 'Bearer no' },
  );
  expect(response.status).toBe(401);
});

test("the official SDK's search request is answered, and its page carries the next cursor", async () => {
  const client = new IntercomClient({ token: TOKEN, baseUrl: url, maxRetries: 0 });
  const page = await client.conversations.search({
    query: { operator: 'AND', value: [{ field: 'state', operator: '=', value: 'closed' }] },
    pagination: { per_page: 2 },
  });
  expect(page.data.map((c) => c.id)).toEqual(['8101', '8103']);
  expect(page.response.pages?.next?.starting_after).toEqual(expect.any(String));
});
