// The peer: Melvin's turn graph as a LangGraph StateGraph on the SQLite checkpointer, one thread per conversation.
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import type { SupportConversationInput } from '../../src/contract/shared';
import type { AgentState, NodeName } from '../../src/contract/state';
import { closeTurn } from '../../src/workflows/records/conversation-record';
import { newState } from '../../src/workflows/records/turn-state';
import type { TurnContext } from './activities';
import { NODES, type PeerNode, type PeerTurn } from './nodes';

/** A turn as LangGraph checkpoints it: plain data, so the set of known part ids is a list (the budget is in the state). */
export type CheckpointedTurn = Omit<PeerTurn, 'budget' | 'knownPartIds'> & {
  runId: string;
  knownPartIds: string[] | null;
};

const PeerState = Annotation.Root({ turn: Annotation<CheckpointedTurn> });

/** Where each node may go: the edges of Melvin's graph (the README's), among which the node's step chooses its `next`. */
const EDGES: Record<PeerNode, NodeName[]> = {
  initialize: ['plan', 'escalate', 'end'],
  plan: ['gather', 'escalate'],
  gather: ['coverage'],
  coverage: ['draft', 'plan', 'escalate'],
  draft: ['validate', 'escalate'],
  validate: ['response', 'escalate'],
  response: ['finalize', 'escalate', 'end'],
  escalate: ['finalize'],
  finalize: ['end', 'escalate'],
};

/**
 * One node as LangGraph runs it. LangGraph hands a node the checkpointed value, which it must not change in place (a
 * retried step would see the change), so the node works on a copy. Its step's `next` goes into the state, where the
 * node's conditional edge reads it; a turn that ends records itself in the conversation, as Melvin's workflow does
 * after its graph.
 */
function runNode(name: PeerNode) {
  return async ({ turn }: typeof PeerState.State): Promise<typeof PeerState.Update> => {
    const { runId, knownPartIds, ...copy } = structuredClone(turn);
    const t: PeerTurn = {
      ...copy,
      budget: copy.state.metadata.data_budget!,
      knownPartIds: knownPartIds && new Set(knownPartIds),
    };
    const step = await NODES[name](t);
    if (step.escalation) t.escalation = step.escalation;
    t.state.next_node = step.next;
    if (step.next === 'end') {
      closeTurn(t.state.metadata.conversation, t.state, {
        runId,
        fetchedUserPartIds: t.fetchedUserPartIds,
        gathered: t.gathered,
        ttl: t.input.toolResultTtl,
        teamAnswer: null,
        now: Date.now(),
      });
    }
    const { budget: _budget, ...rest } = t;
    return { turn: { ...rest, runId, knownPartIds: t.knownPartIds ? [...t.knownPartIds] : null } };
  };
}

function buildGraph() {
  // Built in loops from the tables above, so the node names are plain strings to the type checker.
  type State = typeof PeerState.State;
  const graph = new StateGraph(PeerState) as unknown as StateGraph<
    typeof PeerState,
    State,
    typeof PeerState.Update,
    string
  >;
  for (const name of Object.keys(EDGES) as PeerNode[]) graph.addNode(name, runNode(name));
  graph.addEdge(START, 'initialize');
  for (const [name, nexts] of Object.entries(EDGES)) {
    const ends = Object.fromEntries(nexts.map((next) => [next, next === 'end' ? END : next]));
    graph.addConditionalEdges(name, ({ turn }: State) => turn.state.next_node, ends);
  }
  return graph;
}

/** This thread's checkpoints, and their bytes with those of the writes its tasks left. */
const THREAD_SIZE = `SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = @id) AS checkpoints,
  (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) FROM checkpoints WHERE thread_id = @id)
  + (SELECT coalesce(sum(length(value)), 0) FROM writes WHERE thread_id = @id) AS bytes`;

/** The compiled peer on its checkpoint database, and what the bench reads of the database. */
export class PeerGraph {
  private readonly saver: SqliteSaver;
  private readonly app;

  constructor(private readonly dbPath: string) {
    this.saver = SqliteSaver.fromConnString(dbPath);
    this.app = buildGraph().compile({ checkpointer: this.saver });
  }

  /**
   * One turn of a conversation: a fresh state carrying the conversation record its thread's last turn left (as Melvin's
   * continue-as-new carries it), run to the graph's end, every step checkpointed before the next begins. Returns the
   * turn's final state.
   */
  async turn(input: SupportConversationInput, context: TurnContext): Promise<AgentState> {
    const config = { configurable: { thread_id: input.conversationId } };
    const previous = (await this.app.getState(config)).values as Partial<typeof PeerState.State>;
    const startedAt = Date.now();
    const conversation = previous.turn?.state.metadata.conversation ?? input.conversation;
    const first: CheckpointedTurn = {
      runId: randomUUID(),
      input,
      state: newState({ ...input, conversation }, new Date(startedAt).toISOString()),
      notBefore: Math.floor(startedAt / 1000),
      knownPartIds: null,
      fetchedUserPartIds: [],
      gathered: [],
      escalation: null,
      partial: null,
    };
    const result = await this.app.invoke({ turn: first }, { ...config, context, durability: 'sync' });
    return result.turn.state;
  }

  /** The conversation's thread in the database: see THREAD_SIZE. */
  threadSize(threadId: string): { checkpoints: number; bytes: number } {
    return this.saver.db.prepare(THREAD_SIZE).get({ id: threadId }) as { checkpoints: number; bytes: number };
  }

  /** The database's files on disk, its write-ahead log included. */
  fileBytes(): number {
    const size = (file: string) => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    return size(this.dbPath) + size(`${this.dbPath}-wal`);
  }

  close(): void {
    this.saver.db.close();
  }
}
