// What the node tests share: a fresh run's state, as the workflow makes it at its start.
import type { AgentState } from '../../../src/contract/state';
import { newState } from '../../../src/workflows/records/turn-state';

export function freshState(maxHops = 2): AgentState {
  return newState({ conversationId: 'c-1', maxHops }, '2026-11-28T10:00:00.000Z');
}

/** A state whose conversation holds the user's messages as parts `p1`, `p2`, …, with `files` of them files only. */
export function stateWithMessages(texts: string[], files: number[] = []): AgentState {
  const state = freshState();
  state.messages = texts.map((content) => ({ role: 'user' as const, content }));
  state.metadata.message_part_ids = texts.map((_, i) => `p${i + 1}`);
  state.metadata.attachment_only_part_ids = files.map((i) => `p${i + 1}`);
  return state;
}
