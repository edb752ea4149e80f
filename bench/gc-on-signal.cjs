// Loaded into the bench's worker (`node --expose-gc --require`): SIGWINCH runs a full garbage collection, so the memory
// phase reads the worker's resident memory without the garbage V8 had no reason to collect yet. Not SIGUSR2: the
// Temporal SDK's worker shuts down on it. SIGWINCH is ignored by default, so nothing else reacts to it.
process.on('SIGWINCH', () => globalThis.gc());
