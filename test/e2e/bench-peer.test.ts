// The bench's LangGraph peer against the sandbox alone (no Temporal): its turns end as Melvin's do (the reply, the notes,
// Melvin Status), it retries as Melvin's policies say, and its measures add up. Installs the peer's dependencies first.
import { execFileSync } from 'node:child_process';
import { PEER_DIR, ensurePeerDeps } from '../../bench/peer-deps';
import { PeerProcess } from '../../bench/peer-process';
import { benchResponder, type BenchShape } from '../../bench/responder';
import { TURN_SETTINGS, seedConversation, type ConversationKind } from '../../harness/harness';
import { generatePayloadKey, payloadKeysEnvironment } from '../../src/encryption/payload-codec';
import { sandboxEnvironment, startSandboxServices, type SandboxServices } from '../../sandbox/services';

const shape: BenchShape = { hops: 1 };
let sandbox: SandboxServices;
let peer: PeerProcess;
let conversations = 0;

beforeAll(async () => {
  await ensurePeerDeps(() => undefined);
  sandbox = await startSandboxServices({ responder: benchResponder(shape) });
  peer = new PeerProcess(TURN_SETTINGS);
  // The worker's configuration, as the bench gives it: the peer never connects to Temporal.
  await peer.start({
    ...sandboxEnvironment(sandbox.urls, '127.0.0.1:7233'),
    ...payloadKeysEnvironment([generatePayloadKey('bench-peer-test')]),
    LOG_LEVEL: 'WARN',
  });
}, 300_000);

afterAll(async () => {
  await peer?.stop();
  await sandbox?.stop();
});

beforeEach(() => {
  Object.assign(shape, { hops: 1, toolCalls: undefined });
  sandbox.talent.latency.range = undefined;
  sandbox.model.faults.set({});
  sandbox.intercom.faults.set({});
});

const seed = (kind: ConversationKind = 'payment') => seedConversation(sandbox, ++conversations, kind);
const escalationNotes = (id: string) => sandbox.intercom.notes(id).filter((n) => n.startsWith('🚨 Escalation'));

test('the peer type-checks against its own dependencies', () => {
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '--noEmit', '-p', PEER_DIR], {
      encoding: 'utf8',
    });
  } catch (err) {
    throw new Error(`tsc -p bench/peer:\n${(err as { stdout?: string }).stdout ?? String(err)}`, { cause: err });
  }
}, 120_000);

test('a payment question: one validated reply with the payment date, Melvin Status success, and measures that add up', async () => {
  const { id } = seed();
  const m = await peer.turn(id);
  expect(m).toMatchObject({ melvinStatus: 'success', hops: 1, toolCalls: 1 });
  expect(sandbox.intercom.replies(id)).toEqual([expect.stringContaining('November 27')]);
  expect(sandbox.intercom.notes(id)).toEqual([expect.stringMatching(/^Validation result:\n\{"overall_passed":true/)]);
  expect(sandbox.intercom.melvinStatus(id)).toBe('success');
  expect(m.activityMs).toBeGreaterThan(0);
  expect(m.overheadMs).toBeGreaterThan(0);
  expect(m.activityMs + m.overheadMs).toBeCloseTo(m.turnMs);
  expect(m.gatherMs).toBeGreaterThan(0);
  expect(m.gatherMs!).toBeLessThan(m.turnMs);
  // One checkpoint a step at least: the input, then Initialize through Finalize (eight nodes in a 1-hop turn).
  expect(m.checkpoints).toBeGreaterThanOrEqual(9);
  expect(m.threadBytes).toBeGreaterThan(0);
  expect(m.databaseBytes).toBeGreaterThan(0);
});

test('a request for a person goes to the team: no reply, one escalation note, Melvin Status ROUTE_TO_TEAM', async () => {
  const { id } = seed('human');
  const m = await peer.turn(id);
  expect(m.melvinStatus).toBe('ROUTE_TO_TEAM');
  expect(sandbox.intercom.replies(id)).toEqual([]);
  expect(escalationNotes(id)).toEqual([expect.stringContaining('User requested to talk to a human')]);
});

test('a second hop when coverage finds the data short; k planned tool calls run at once', async () => {
  shape.hops = 2;
  const twoHops = await peer.turn(seed().id);
  expect(twoHops).toMatchObject({ melvinStatus: 'success', hops: 2, toolCalls: 2 });
  Object.assign(shape, { hops: 1, toolCalls: 4 });
  sandbox.talent.latency.range = [200, 200];
  const fanOut = await peer.turn(seed().id);
  expect(fanOut).toMatchObject({ melvinStatus: 'success', toolCalls: 4 });
  expect(fanOut.gatherMs).toBeGreaterThanOrEqual(200);
  expect(fanOut.gatherMs).toBeLessThan(2 * 200);
});

test('turns of several conversations run at once, each to its own end', async () => {
  const ids = [seed().id, seed('human').id, seed().id];
  const measures = await Promise.all(ids.map((id) => peer.turn(id)));
  expect(measures.map((m) => m.melvinStatus)).toEqual(['success', 'ROUTE_TO_TEAM', 'success']);
  for (const id of ids) expect(sandbox.intercom.melvinStatus(id)).toBeDefined();
});

test("Melvin's retry policies: a model 503 is retried after the LLM policy's 2 s; a 400 is not, and the turn escalates", async () => {
  sandbox.model.faults.set({ plan: [{ status: 503 }] });
  const started = Date.now();
  const retried = await peer.turn(seed().id);
  expect(retried.melvinStatus).toBe('success');
  expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  sandbox.model.faults.set({ plan: [{ status: 400, always: true }] });
  const { id } = seed();
  expect((await peer.turn(id)).melvinStatus).toBe('error');
  expect(escalationNotes(id)).toEqual([expect.stringContaining('Planning failed')]);
});

test('a reply Intercom accepted but answered 500 to is retried, and the retry finds it rather than posting twice', async () => {
  sandbox.intercom.faults.set({ reply: [{ status: 500, after_accept: true }] });
  const { id } = seed();
  expect((await peer.turn(id)).melvinStatus).toBe('success');
  expect(sandbox.intercom.replies(id)).toHaveLength(1);
});
