// Gather's pure helpers: identity scoping of tool arguments, result keys that never overwrite, and the gather summary.
import type { ToolDefinition, ToolResult } from '../../src/state';
import { docsDataKey, scopeToolCall, summarizeGather, toolDataKey } from '../../src/workflows/tool-calls';

const tools: ToolDefinition[] = [
  {
    name: 'get_user_payments',
    description: '',
    server: 'talent',
    input_schema: { type: 'object', properties: { email: {} } },
  },
  {
    name: 'get_job_details',
    description: '',
    server: 'talent',
    input_schema: { type: 'object', properties: { job_id: {} } },
  },
];

describe('scopeToolCall', () => {
  test('identity arguments come from the contact, whatever the model wrote', () => {
    const scoped = scopeToolCall(
      {
        tool_name: 'get_user_payments',
        parameters: { email: 'other@example.com', user_email: 'x@y.z', limit: 5 },
        reasoning: '',
      },
      tools,
      'ana@example.com',
    );
    expect(scoped).toMatchObject({ ok: true, arguments: { email: 'ana@example.com', limit: 5 } });
  });

  test('a tool without identity arguments gets none added, and model-written ones are dropped', () => {
    const scoped = scopeToolCall(
      { tool_name: 'get_job_details', parameters: { job_id: 'j', email: 'o@x.y' }, reasoning: '' },
      tools,
      'a@b.c',
    );
    expect(scoped.arguments).toEqual({ job_id: 'j' });
  });

  test('an unknown tool, or a user tool without a contact email, is a failed result without a call', () => {
    expect(scopeToolCall({ tool_name: 'drop_tables', parameters: {}, reasoning: '' }, tools, 'a@b.c')).toMatchObject({
      ok: false,
      error: 'unknown tool "drop_tables"',
    });
    expect(scopeToolCall({ tool_name: 'get_user_payments', parameters: {}, reasoning: '' }, tools, null)).toMatchObject(
      { ok: false },
    );
  });
});

test('a tool called again keeps both results: by name, then "(hop N)", then numbered', () => {
  const data: Record<string, unknown> = {};
  const keys = [1, 2, 2, 2].map((hop) => {
    const key = toolDataKey(data, 'get_job_details', hop);
    data[key] = hop;
    return key;
  });
  expect(keys).toEqual([
    'get_job_details',
    'get_job_details (hop 2)',
    'get_job_details (hop 2) #2',
    'get_job_details (hop 2) #3',
  ]);
});

test('docs are keyed "<query> (hop N)", a repeated query numbered', () => {
  const data: Record<string, unknown> = {};
  data[docsDataKey(data, 'payout', 1)] = 1;
  expect(docsDataKey(data, 'payout', 1)).toBe('payout (hop 1) #2');
  expect(docsDataKey(data, 'payout', 2)).toBe('payout (hop 2)');
});

test('gather summary: skipped, completed, partial, failed', () => {
  const result = (success: boolean) => ({ success }) as ToolResult;
  expect(summarizeGather([], 0)).toMatchObject({ execution_status: 'skipped', success_rate: 1 });
  expect(summarizeGather([result(true)], 5)).toMatchObject({
    execution_status: 'completed',
    total_execution_time_ms: 5,
  });
  expect(summarizeGather([result(true), result(false)], 5)).toMatchObject({
    execution_status: 'partial',
    success_rate: 0.5,
  });
  expect(summarizeGather([result(false)], 5)).toMatchObject({ execution_status: 'failed', success_rate: 0 });
});
