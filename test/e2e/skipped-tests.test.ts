// A machine without PostgreSQL: `npm test`'s jest run skips the PostgreSQL topology test and says why, and under
// CI=true the same run fails instead, since CI must run everything.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { ROOT } from '../helpers/processes';

/** A loopback port nothing listens on: bound by the kernel, then released. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function jestRun(env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const child = spawn(npm, ['run', 'test:only', '--', 'test/e2e/postgres-topology.test.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

test('without PostgreSQL the topology test is skipped with the reason, and fails under CI=true', async () => {
  const port = await closedPort();
  const env: NodeJS.ProcessEnv = { ...process.env, PGHOST: '127.0.0.1', PGPORT: String(port) };
  delete env.CI;

  const laptop = await jestRun(env);
  expect(laptop.code).toBe(0);
  expect(laptop.output).toContain(`Not on this machine: PostgreSQL (cannot reach 127.0.0.1:${port}`);
  expect(laptop.output).toMatch(/Skipped on this machine \(they run under CI=true\):\n\s+test\/e2e\/postgres-topology/);
  expect(laptop.output).toContain(`needs PostgreSQL: cannot reach 127.0.0.1:${port}`);
  expect(laptop.output).toMatch(/Tests:\s+1 skipped, 1 total/);

  const ci = await jestRun({ ...env, CI: 'true' });
  expect(ci.code).not.toBe(0);
  expect(ci.output).toContain('CI=true runs every test, and this machine lacks PostgreSQL');
}, 180_000);
