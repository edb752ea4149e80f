// Small parsers at the trust boundaries: Retry-After, Intercom bodies, role mapping, configuration and the CLI.
import * as errors from '../../src/activities/errors';
import {
  handledBefore,
  messagesFromConversation,
  IntercomConversation,
  replySettingsOf,
} from '../../src/activities/intercom';
import { comparableText, htmlToText, textToHtml } from '../../src/activities/intercom-text';
import { retryAfterMs } from '../../src/activities/retry-after';
import { UsageError, parseCommand } from '../../src/client';
import {
  ConfigError,
  DEFAULT_CACHED_RUNS,
  DEFAULT_LOCAL_ACTIVITY_SLOTS,
  handoverMessages,
  loadTurnConfig,
  loadWorkerConfig,
  modelTierSettings,
  parseMcpServers,
} from '../../src/config/environment';
import { DEFAULT_HANDOVER_MESSAGE } from '../../src/contract/shared';
import * as policies from '../../src/workflows/activity-options/retry-policies';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  test.each([
    [{ 'Retry-After': '3' }, 3000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'Retry-After': 'Sun, 22 Nov 2026 10:00:05 GMT' }, 5000],
    [{ 'X-RateLimit-Reset': String(now / 1000 + 10) }, 10_000],
    [{ 'Retry-After': '9999' }, 120_000],
    [{ 'Retry-After': 'soon' }, undefined],
    [{}, undefined],
  ])('%j → %s', (headers, expected) => {
    expect(retryAfterMs(headers, now)).toBe(expected);
    expect(retryAfterMs(new Headers(headers), now)).toBe(expected);
  });
});

test('replies go to Intercom as HTML paragraphs and breaks; posted bodies compare with whitespace ignored', () => {
  expect(textToHtml('a < b\nc\n\nd')).toBe('<p>a &lt; b<br>c</p><p>d</p>');
  expect(comparableText('One.\nTwo.\n\n  Three')).toBe(comparableText('One. Two. Three'));
});

test('a teammate’s HTML reply from a webhook reads as plain text', () => {
  expect(htmlToText('<p>Hi Ana,<br>it arrives on Nov 27 &amp; not later.</p><p>Sam &lt;payments&gt;</p>')).toBe(
    'Hi Ana,\nit arrives on Nov 27 & not later.\n\nSam <payments>',
  );
});

test('a conversation’s reply settings come from its attributes; an unusable value is reported, not used', () => {
  expect(replySettingsOf(undefined)).toEqual({ mode: null, approval_timeout_seconds: null, problems: [] });
  expect(replySettingsOf({ 'Melvin Reply Mode': ' Approve ', 'Melvin Approval Timeout': 300 })).toEqual({
    mode: 'approve',
    approval_timeout_seconds: 300,
    problems: [],
  });
  const bad = replySettingsOf({ 'Melvin Reply Mode': 'aprove', 'Melvin Approval Timeout': 2.5, 'Melvin Status': 'x' });
  expect(bad).toMatchObject({ mode: null, approval_timeout_seconds: null });
  expect(bad.problems).toEqual([
    'Melvin Reply Mode is "aprove": it must be auto, approve or shadow',
    'Melvin Approval Timeout is 2.5: it must be a whole number of seconds from 1 to 604800',
  ]);
  expect(replySettingsOf({ 'Melvin Reply Mode': '' }).problems).toEqual([]);
});

test('role mapping: contact/lead/user → user; admin/bot/team → assistant; notes and empty events out; source first; user part ids', () => {
  const part = (id: string, part_type: string, type: string, body: string | null, authorId = '42') => ({
    id,
    part_type,
    body,
    author: { type, id: authorId },
  });
  const MELVIN = '8918000';
  const conversation = IntercomConversation.parse({
    id: '1',
    source: { id: '1000', body: 'first', author: { type: 'contact' } },
    conversation_parts: {
      conversation_parts: [
        part('2', 'comment', 'bot', 'bot says'),
        part('3', 'note', 'admin', 'secret note'),
        part('3b', 'note', 'bot', '🚨 Escalation: the user asks where their payment is', MELVIN),
        part('3c', 'note', 'bot', '🚨 Escalation: VIP, owes us a refund\nRequested by: lead@team', MELVIN),
        part('4', 'assignment', 'admin', null),
        part('5', 'comment', 'team', 'team says'),
        part('6', 'comment', 'lead', 'lead says'),
        part('7', 'comment', 'admin', 'admin says'),
        part('8', 'open', 'user', 'user reopens'),
      ],
      total_count: 7,
    },
  });
  expect(messagesFromConversation(conversation, MELVIN)).toEqual({
    messages: [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'bot says' },
      { role: 'assistant', content: 'team says' },
      { role: 'user', content: 'lead says' },
      { role: 'assistant', content: 'admin says' },
      { role: 'user', content: 'user reopens' },
    ],
    // Which Intercom part each message is: a turn answers those the ledger does not hold yet.
    message_part_ids: ['1000', '2', '5', '6', '7', '8'],
    // Melvin's own note is not the team's: a reply may say what it said; one carrying an operator's reason is.
    internal_notes: ['secret note', '🚨 Escalation: VIP, owes us a refund\nRequested by: lead@team'],
    // The ledger's ids: the user's messages, the source's included.
    user_part_ids: ['1000', '6', '8'],
    attachment_only_part_ids: [],
  });
});

test('what earlier workflows handled: the user’s messages older than Melvin’s newest part before the reading workflow’s own', () => {
  const MELVIN = '8918000';
  const user = (id: string) => ({ id, part_type: 'comment', body: id, author: { type: 'user', id: 'u' } });
  const melvin = (id: string, part_type = 'comment') => ({
    id,
    part_type,
    body: id,
    author: { type: 'admin', id: MELVIN },
  });
  const conversation = IntercomConversation.parse({
    id: '1',
    source: { id: 's', body: 'first', author: { type: 'contact' } },
    conversation_parts: {
      conversation_parts: [
        melvin('r1'),
        user('u2'),
        melvin('n2', 'note'),
        user('u3'),
        user('u4'),
        melvin('n4', 'note'),
      ],
      total_count: 6,
    },
  });
  // A workflow that read the conversation before it posted anything: Melvin's newest part of all.
  expect(handledBefore(conversation, MELVIN)).toEqual(['s', 'u2', 'u3', 'u4']);
  expect(handledBefore(conversation, MELVIN, null)).toEqual(['s', 'u2', 'u3', 'u4']);
  // One that could not, and posted n4 first (its hand-over): u3 and u4 came after the workflows before it.
  expect(handledBefore(conversation, MELVIN, 'n4')).toEqual(['s', 'u2']);
  expect(handledBefore(conversation, MELVIN, 'n2')).toEqual(['s']);
  expect(handledBefore(conversation, MELVIN, 'r1')).toEqual([]);
  // Its first part no longer among those Intercom returned: Melvin's newest part of all, as before.
  expect(handledBefore(conversation, MELVIN, 'gone')).toEqual(['s', 'u2', 'u3', 'u4']);
});

test('what earlier workflows handled goes by Melvin’s replies and notes: a snooze or an assignment of its own answers nothing', () => {
  const MELVIN = '8918000';
  const part = (id: string, part_type: string, author: 'user' | 'melvin') => ({
    id,
    part_type,
    body: part_type === 'comment' || part_type === 'note' ? id : null,
    author: author === 'user' ? { type: 'user', id: 'u' } : { type: 'admin', id: MELVIN },
  });
  const conversation = (...parts: ReturnType<typeof part>[]) =>
    IntercomConversation.parse({
      id: '1',
      source: { id: 's', body: 'first', author: { type: 'contact' } },
      conversation_parts: { conversation_parts: parts, total_count: parts.length },
    });
  const answered = part('r1', 'comment', 'melvin');
  // A reading workflow whose own note waited for Intercom while it snoozed the conversation: u2 is its own to answer.
  expect(
    handledBefore(conversation(answered, part('u2', 'comment', 'user'), part('z', 'snoozed', 'melvin')), MELVIN, null),
  ).toEqual(['s']);
  expect(
    handledBefore(conversation(part('u2', 'comment', 'user'), part('z', 'snoozed', 'melvin')), MELVIN, null),
  ).toEqual([]);
  expect(
    handledBefore(conversation(answered, part('u2', 'comment', 'user'), part('a', 'assignment', 'melvin')), MELVIN),
  ).toEqual(['s']);
  expect(handledBefore(conversation(part('u2', 'comment', 'user'), part('o', 'open', 'melvin')), MELVIN)).toEqual([]);
  // Must not change: a note of Melvin's after the message (a hand-over) handled it, and a snooze after that changes nothing.
  expect(
    handledBefore(
      conversation(part('u2', 'comment', 'user'), part('n', 'note', 'melvin'), part('z', 'snoozed', 'melvin')),
      MELVIN,
    ),
  ).toEqual(['s', 'u2']);
  expect(
    handledBefore(conversation(part('u2', 'comment', 'user'), part('r', 'comment', 'melvin')), MELVIN, null),
  ).toEqual(['s', 'u2']);
});

test('every non-retryable error type in the policy table is an error class activities throw', () => {
  const policyTypes = Object.values(policies).flatMap((p) =>
    'retry' in p && typeof p.retry === 'object' ? (p.retry.nonRetryableErrorTypes ?? []) : [],
  );
  expect(policyTypes.length).toBeGreaterThan(5);
  for (const type of policyTypes) expect(Object.keys(errors)).toContain(type);
});

describe('configuration', () => {
  const valid = {
    INTERCOM_API_KEY: 'k',
    MCP_SERVERS: 'talent=http://127.0.0.1:8765/mcp;docs=node docs-server.js --stdio',
    OPENAI_API_KEY: 'k',
    VALIDATION_ENDPOINT: 'http://127.0.0.1:8766/validate',
    VALIDATION_API_KEY: 'k',
  };

  test('defaults fill what is optional', () => {
    const config = loadWorkerConfig(valid);
    expect(config).toMatchObject({
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      TASK_QUEUE: 'melvin',
      MELVIN_ADMIN_ID: '8918000',
      MODEL_NAME: 'gpt-4o-mini',
      MCP_SERVERS: [
        { name: 'talent', url: 'http://127.0.0.1:8765/mcp' },
        { name: 'docs', command: 'node', args: ['docs-server.js', '--stdio'] },
      ],
    });
    expect(loadTurnConfig({})).toEqual({
      MAX_HOPS: 2,
      SNOOZE_SECONDS: 300,
      QUIET_PERIOD_SECONDS: 7 * 24 * 3600,
      TURN_DATA_BUDGET_KB: 256,
      TOOL_RESULT_TTL_SECONDS: 600,
      TOOL_RESULT_TTLS: {},
      REPLY_MODE: 'auto',
      APPROVAL_TIMEOUT_SECONDS: 1800,
      HANDOVER_MESSAGE: DEFAULT_HANDOVER_MESSAGE,
      HANDOVER_MESSAGES: {},
      TONE_HANDOVER: 'off',
      COMPLAINTS_BEFORE_HANDOVER: 3,
    });
  });

  test('a missing or invalid variable fails with its name', () => {
    expect(() => loadWorkerConfig({ ...valid, INTERCOM_API_KEY: '' })).toThrow(/INTERCOM_API_KEY: required/);
    expect(() => loadWorkerConfig({ ...valid, VALIDATION_ENDPOINT: 'not a url' })).toThrow(
      /VALIDATION_ENDPOINT: must be an http\(s\) URL/,
    );
    expect(() => loadWorkerConfig({ ...valid, MELVIN_ADMIN_ID: 'melvin' })).toThrow(
      /MELVIN_ADMIN_ID: must be a numeric/,
    );
    expect(() => loadWorkerConfig({ ...valid, MCP_SERVERS: 'a=x;a=y' })).toThrow(
      /MCP_SERVERS: server name "a" is used twice/,
    );
    for (const size of ['-1', '0'])
      expect(() => loadWorkerConfig({ ...valid, WORKER_MAX_CACHED_WORKFLOWS: size })).toThrow(
        /WORKER_MAX_CACHED_WORKFLOWS/,
      );
    expect(loadWorkerConfig({ ...valid, WORKER_MAX_CACHED_WORKFLOWS: '500' }).WORKER_MAX_CACHED_WORKFLOWS).toBe(500);
    expect(loadWorkerConfig(valid).WORKER_MAX_CACHED_WORKFLOWS).toBe(DEFAULT_CACHED_RUNS);
    for (const slots of ['0', '-5', '2.5', 'many'])
      expect(() => loadWorkerConfig({ ...valid, WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: slots })).toThrow(
        /WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES/,
      );
    expect(
      loadWorkerConfig({ ...valid, WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES: '400' })
        .WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES,
    ).toBe(400);
    expect(loadWorkerConfig(valid).WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES).toBe(DEFAULT_LOCAL_ACTIVITY_SLOTS);
    expect(() => loadTurnConfig({ MAX_HOPS: 'zero' })).toThrow(ConfigError);
    expect(() => loadTurnConfig({ MAX_HOPS: '9' })).toThrow(/MAX_HOPS/);
    expect(() => loadTurnConfig({ QUIET_PERIOD_SECONDS: '-1' })).toThrow(/QUIET_PERIOD_SECONDS/);
  });

  test('model tiers: each takes the shared settings it does not replace, and a bad one is named', () => {
    expect(modelTierSettings(loadWorkerConfig(valid))).toEqual({
      plan: { baseURL: 'https://api.openai.com/v1', apiKey: 'k', model: 'gpt-4o-mini', responseFormat: 'auto' },
      draft: { baseURL: 'https://api.openai.com/v1', apiKey: 'k', model: 'gpt-4o-mini', responseFormat: 'auto' },
    });
    const tiers = modelTierSettings(
      loadWorkerConfig({
        ...valid,
        MODEL_NAME: 'big',
        LLM_RESPONSE_FORMAT: 'json_object',
        PLAN_MODEL_NAME: 'small',
        PLAN_OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
        PLAN_OPENAI_API_KEY: 'local',
        DRAFT_LLM_RESPONSE_FORMAT: 'json_schema',
        DRAFT_MODEL_NAME: '',
      }),
    );
    expect(tiers).toEqual({
      plan: { baseURL: 'http://127.0.0.1:11434/v1', apiKey: 'local', model: 'small', responseFormat: 'json_object' },
      draft: { baseURL: 'https://api.openai.com/v1', apiKey: 'k', model: 'big', responseFormat: 'json_schema' },
    });
    expect(() => loadWorkerConfig({ ...valid, DRAFT_OPENAI_BASE_URL: 'localhost:1' })).toThrow(
      /DRAFT_OPENAI_BASE_URL: must be an http\(s\) URL/,
    );
    expect(() => loadWorkerConfig({ ...valid, PLAN_LLM_RESPONSE_FORMAT: 'json' })).toThrow(/PLAN_LLM_RESPONSE_FORMAT/);
  });

  test('hand-over messages: one text for every kind, replaced per kind, and an empty one sends nothing', () => {
    const texts = handoverMessages(
      loadTurnConfig({ HANDOVER_MESSAGE: 'Someone will be with you.', HANDOVER_MESSAGES: '{"operator":""}' }),
    );
    expect(texts.user_requested_human).toBe('Someone will be with you.');
    expect(texts.operator).toBe('');
    expect(handoverMessages(loadTurnConfig({ HANDOVER_MESSAGE: '' })).hops_exhausted).toBe('');
    expect(() => loadTurnConfig({ HANDOVER_MESSAGES: '{"operatr":"x"}' })).toThrow(
      /HANDOVER_MESSAGES: Unrecognized key: "operatr"/,
    );
    expect(() => loadTurnConfig({ HANDOVER_MESSAGES: 'yes' })).toThrow(/HANDOVER_MESSAGES: must be a JSON object/);
    expect(loadTurnConfig({ TOOL_RESULT_TTLS: '{"get_user_payments":60}' }).TOOL_RESULT_TTLS).toEqual({
      get_user_payments: 60,
    });
    expect(() => loadTurnConfig({ TOOL_RESULT_TTLS: '{"get_user_payments":-1}' })).toThrow(
      /TOOL_RESULT_TTLS: get_user_payments: Too small/,
    );
  });

  test('MCP_SERVERS without names get numbered ones', () => {
    expect(parseMcpServers('http://a.example/mcp')).toEqual([{ name: 'mcp1', url: 'http://a.example/mcp' }]);
    expect(() => parseMcpServers(' ; ')).toThrow('lists no server');
  });
});

describe('CLI arguments', () => {
  test.each([
    [['start', '123'], { command: 'start', conversationId: '123' }],
    [['escalate', '123', '--reason', 'VIP'], { command: 'escalate', conversationId: '123', reason: 'VIP' }],
    [
      ['hand-back', '123', '--reason', 'Sorted', '--by', 'lead'],
      { command: 'hand-back', conversationId: '123', reason: 'Sorted', by: 'lead' },
    ],
    [['approve', '123'], { command: 'approve', conversationId: '123' }],
    [
      ['approve', '123', '--text', 'Paid Friday.', '--by', 'lead'],
      { command: 'approve', conversationId: '123', text: 'Paid Friday.', by: 'lead' },
    ],
    [['reject', '123', '--reason', 'Wrong shift'], { command: 'reject', conversationId: '123', reason: 'Wrong shift' }],
    [['state', 'abc-1'], { command: 'state', conversationId: 'abc-1' }],
    [['list', '--status', 'ROUTE_TO_TEAM'], { command: 'list', status: 'ROUTE_TO_TEAM', limit: 20 }],
    [['report'], { command: 'report', since: { text: '7d', ms: 7 * 86_400_000 }, json: false }],
    [
      ['report', '--since', '90m', '--json'],
      { command: 'report', since: { text: '90m', ms: 90 * 60_000 }, json: true },
    ],
  ])('%j', (argv, expected) => {
    expect(parseCommand(argv)).toEqual(expected);
  });

  test.each([
    [[], 'unknown command ""'],
    [['launch', '1'], 'unknown command "launch"'],
    [['start'], 'conversation id: a conversation id is required'],
    [['start', '../etc'], 'conversation id: must be 1-64 letters'],
    [['escalate', '1'], 'reason: --reason is required'],
    [['hand-back', '1'], 'reason: --reason is required'],
    [['reject', '1'], 'reason: --reason is required'],
    [['approve', '1', '--text', ' '], 'text: --text must not be empty'],
    [['list', '--limit', '0'], 'limit:'],
    [['state', '1', '--colour'], "Unknown option '--colour'"],
    [['report', '--since', '7'], 'since: a whole number followed by m, h or d, like 90m, 24h or 7d'],
    [['report', '--since', '400d'], 'since: at most 366d'],
    [['report', '30d'], 'unexpected argument "30d": give the window as --since <n>m|h|d'],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });
});
