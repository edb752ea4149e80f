// The LangGraph peer as a process of its own, as Melvin's worker is: Melvin's activities built from the worker's
// configuration, the peer graph on its SQLite checkpointer, and the turns the bench asks for over IPC, run as they come.
import { DefaultLogger } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { ConfigError, loadWorkerConfig } from '../../src/config/environment';
import { errorMessage } from '../../src/observability/error-message';
import type { SupportConversationInput } from '../../src/contract/shared';
import { activityClients } from '../../src/worker';
import type { PeerMessage, PeerRequest, PeerTurnMeasures } from '../peer-process';
import { unionMs } from '../spans';
import type { TurnContext } from './activities';
import { PeerGraph } from './graph';

async function main(): Promise<void> {
  const config = loadWorkerConfig();
  const database = process.env.PEER_CHECKPOINT_DB;
  if (!database) throw new ConfigError('PEER_CHECKPOINT_DB must name the checkpoint database file');
  if (!process.send) throw new ConfigError('the peer takes its turns over IPC: start it with bench/peer-process.ts');
  const clients = activityClients(config);
  const activities = createActivities(clients);
  const logger = new DefaultLogger(config.LOG_LEVEL);
  const peer = new PeerGraph(database);

  /** One turn, timed from the bench's request to the graph's end; the activity calls are timed by their tasks. */
  async function measuredTurn(input: SupportConversationInput): Promise<PeerTurnMeasures> {
    const context: TurnContext = { activities, logger, calls: [] };
    const started = performance.now();
    const state = await peer.turn(input, context);
    const turnMs = performance.now() - started;
    const calls = context.calls.filter((c) => c.startMs >= 0);
    const activityMs = unionMs(calls.map((c) => [c.startMs, c.endMs]));
    const tools = calls.filter((c) => c.name === 'callTool');
    const thread = peer.threadSize(input.conversationId);
    return {
      turnMs,
      activityMs,
      overheadMs: turnMs - activityMs,
      dispatchMs: calls.reduce((sum, c) => sum + (c.startMs - c.scheduledMs), 0),
      gatherMs: tools.length
        ? Math.max(...tools.map((c) => c.endMs)) - Math.min(...tools.map((c) => c.scheduledMs))
        : undefined,
      toolCalls: tools.length,
      hops: state.hops.length,
      melvinStatus: state.finalize?.melvin_status ?? 'skipped',
      checkpoints: thread.checkpoints,
      threadBytes: thread.bytes,
      databaseBytes: peer.fileBytes(),
    };
  }

  const send = (message: PeerMessage) => process.send?.(message);
  process.on('message', (request: PeerRequest) => {
    measuredTurn(request.input).then(
      (measures) => send({ id: request.id, measures }),
      (err: unknown) => send({ id: request.id, error: errorMessage(err) }),
    );
  });
  // The bench's exit closes the channel, however it exits: the peer must not outlive it.
  const disconnected = new Promise((resolve) => process.once('disconnect', resolve));
  send({ ready: true });
  try {
    await disconnected;
  } finally {
    await clients.mcp.close();
    peer.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof ConfigError ? err.message : err);
    process.exit(1);
  },
);
