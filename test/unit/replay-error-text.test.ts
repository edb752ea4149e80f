// The model tests' replay failures name the history event the replay could not match, however long the SDK's preamble.
import { replayErrorText } from '../model/replay';

const PREAMBLE =
  'Replay failed with a nondeterminism error. This means that the workflow code as written is not ' +
  'compatible with the history that was fed in. '.repeat(4);

test('the event the replay could not match is kept past a long preamble', () => {
  const detail = '[TMPRL1100] Nondeterminism error: No command scheduled for event HistoryEvent(id: 128, TimerStarted)';
  const text = replayErrorText(`${PREAMBLE}Details: Failure { message: "${detail}" }`);
  expect(text.startsWith(detail)).toBe(true);
});

test('a message without an SDK error code is shown from its start', () => {
  expect(replayErrorText('history is empty')).toBe('history is empty');
  expect(replayErrorText('x'.repeat(1000))).toHaveLength(400);
});
