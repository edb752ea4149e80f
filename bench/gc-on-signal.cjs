// Loaded into the bench's worker (`node --expose-gc --require`), in its main thread and, as Node preloads it there too,
// in the SDK's workflow thread, where the runs' objects live in a V8 heap of their own. SIGWINCH to the process collects
// the garbage of every thread (the main thread passes it on over a BroadcastChannel: signals reach only the main
// thread), so the memory phase reads the worker's resident memory without the garbage V8 had no reason to collect yet;
// each thread then prints its heap as a log line (`heap after collection`) for the phase to read.
// Not SIGUSR2: the Temporal SDK's worker shuts down on it. SIGWINCH is ignored by default, so nothing else reacts to it.
const { BroadcastChannel, isMainThread, threadId } = require('node:worker_threads');
const { setTimeout: sleep } = require('node:timers/promises');
const v8 = require('node:v8');

/**
 * One full collection is not enough: V8 gives back emptied pages and ArrayBuffers' memory only after the collection's
 * concurrent sweeping and weak callbacks, on later turns of the event loop (a worker after a load phase held 30 MiB
 * more after one collection than after three). So each thread collects, lets the loop turn, and again, until what its
 * heap holds shrinks by less than this, or it has tried `MAX_ROUNDS` times; its line says whether it settled.
 */
const SETTLED_BYTES = 1024 * 1024;
const MAX_ROUNDS = 8;
const PAUSE_MS = 100;
/** The young generation: empty after a full collection, its pages committed or given back by V8's own timing. */
const YOUNG_SPACES = new Set(['new_space', 'new_large_object_space']);

/** The pages of the thread's young generation, in memory. */
function youngBytes() {
  const young = v8.getHeapSpaceStatistics().filter((space) => YOUNG_SPACES.has(space.space_name));
  return young.reduce((sum, space) => sum + space.physical_space_size, 0);
}

/** What the rest of the thread's V8 heap holds in memory: its pages, and its ArrayBuffers' and Buffers' memory. */
function heldBytes() {
  const stats = v8.getHeapStatistics();
  return stats.total_physical_size - youngBytes() + stats.external_memory;
}

const channel = new BroadcastChannel('melvin-bench-gc');
channel.unref();

async function collect() {
  let held = Infinity;
  for (let rounds = 1; ; rounds += 1) {
    globalThis.gc();
    await sleep(PAUSE_MS);
    const now = heldBytes();
    const settled = held - now < SETTLED_BYTES;
    if (settled || rounds === MAX_ROUNDS) {
      const heapUsed = v8.getHeapStatistics().used_heap_size;
      const reading = {
        pid: process.pid,
        threadId,
        heapUsed,
        youngBytes: youngBytes(),
        heldBytes: now,
        rounds,
        settled,
      };
      console.log(JSON.stringify({ message: 'heap after collection', ...reading }));
      return;
    }
    held = now;
  }
}

if (isMainThread) {
  process.on('SIGWINCH', () => {
    channel.postMessage('collect');
    void collect();
  });
} else {
  channel.onmessage = () => void collect();
}
