// The embedded PostgreSQL of the resolved-conversation index (PGlite with pgvector, in a data directory), served over
// PostgreSQL's wire protocol so the worker speaks to it exactly as to a production server. `npm start` and the tests
// run it as a process of its own: PGlite's WebAssembly build loads itself in ways Jest's module sandbox refuses.
import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { z } from 'zod';

const Args = z.object({
  dataDir: z.string().min(1).optional(),
  port: z.coerce.number().int().min(0).max(65535).default(0),
});

/** `--data-dir DIR` (memory when absent) and `--port N` (0: a free port). */
function parseArgs(argv: string[]): z.infer<typeof Args> {
  const raw: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]!.replace(/^--/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    raw[name] = argv[i + 1] ?? '';
  }
  const parsed = Args.safeParse(raw);
  if (!parsed.success)
    throw new Error(`usage: embedded-database [--data-dir DIR] [--port N]: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.dataDir) mkdirSync(args.dataDir, { recursive: true });
  const db = await PGlite.create({ ...(args.dataDir ? { dataDir: args.dataDir } : {}), extensions: { vector } });
  const server = new PGLiteSocketServer({ db, port: args.port, host: '127.0.0.1', maxConnections: 16 });
  await server.start();
  const address = server.getServerConn();
  const port = Number(address.split(':').at(-1));
  // The one line the parent reads: where to connect.
  process.stdout.write(`${JSON.stringify({ ready: true, url: `postgres://postgres@127.0.0.1:${port}/postgres` })}\n`);
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await server.stop();
    await db.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  // A parent that dies without a signal closes our stdin: the database stops with it.
  process.stdin.on('end', () => void stop());
  process.stdin.resume();
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
