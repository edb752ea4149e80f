// The ports tests hand to child processes: outside the range the kernel hands out itself, disjoint between parallel
// jest workers, never the same twice in a row, and free when handed out.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePorts } from '../../harness/stack';

const ephemeralLow = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32768;
  }
})();

/** Runs `body` as if in jest worker `id`. */
async function asWorker<T>(id: string, body: () => Promise<T>): Promise<T> {
  const own = process.env.JEST_WORKER_ID;
  process.env.JEST_WORKER_ID = id;
  try {
    return await body();
  } finally {
    if (own === undefined) delete process.env.JEST_WORKER_ID;
    else process.env.JEST_WORKER_ID = own;
  }
}

test('handed-out ports lie below the ephemeral range and below 32768, and each can be listened on', async () => {
  const ports = await freePorts(20);
  for (const port of ports) {
    expect(port).toBeLessThan(Math.min(ephemeralLow, 32768));
    expect(port).toBeGreaterThanOrEqual(10_000);
    // Listening proves it was free; a port the kernel handed to a connection would fail here.
    await new Promise<void>((resolve, reject) => {
      const server = net.createServer().once('error', reject);
      server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
    });
  }
});

test('one process does not hand out a port twice while the first may still be waiting to be bound', async () => {
  const first = await freePorts(50);
  const second = await freePorts(50);
  expect(new Set([...first, ...second]).size).toBe(100);
});

test('two parallel jest workers draw from slices that do not overlap', async () => {
  const span = async (worker: string) => {
    const ports = await asWorker(worker, () => freePorts(30));
    return { low: Math.min(...ports), high: Math.max(...ports) };
  };
  const overlap = (a: { low: number; high: number }, b: { low: number; high: number }) =>
    a.low <= b.high && b.low <= a.high;
  const [one, two, three, nine] = [await span('1'), await span('2'), await span('3'), await span('9')];
  expect([overlap(one, two), overlap(two, three), overlap(one, three)]).toEqual([false, false, false]);
  // Eight slices: workers 1 and 9 share one.
  expect(overlap(one, nine)).toBe(true);
});
