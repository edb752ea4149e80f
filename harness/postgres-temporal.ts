// The production topology without Docker: the Temporal server and its SQL schema tool built from Go modules at the
// version the CLI bundles, the schema set up in PostgreSQL, and the server run as its own process.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { Client as PgClient } from 'pg';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { createDataConverter, generatePayloadKey } from '../src/encryption/payload-codec';
import { allSearchAttributes } from '../src/contract/shared';
import { waitFor } from '../sandbox/wait';
import { freePorts, type TemporalServer } from './stack';
import { cacheDir, goAvailable, goInstall } from './temporal-cli';
import { dynamicConfigFile } from './temporal-dynamic-config';
import { errorMessage } from '../src/observability/error-message';

/** The server version the Temporal CLI 1.5.1 bundles (`temporal --version` says "Server 1.29.1"). */
export const TEMPORAL_SERVER_VERSION = '1.29.1';

export interface PostgresOptions {
  host: string;
  port: number;
  user: string;
  password?: string;
}

/** PostgreSQL as libpq's environment variables name it (PGHOST, PGPORT, PGUSER, PGPASSWORD), else the local default. */
export function postgresFromEnvironment(env: NodeJS.ProcessEnv = process.env): PostgresOptions {
  return {
    host: env.PGHOST ?? '127.0.0.1',
    port: Number(env.PGPORT ?? 5432),
    user: env.PGUSER ?? 'postgres',
    password: env.PGPASSWORD,
  };
}

/** Finds (or builds, once, into the cache) `temporal-server` and `temporal-sql-tool`. */
export async function temporalServerTools(log: (line: string) => void): Promise<{ server: string; sqlTool: string }> {
  const server = path.join(cacheDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const sqlTool = path.join(cacheDir(), `temporal-sql-tool-${TEMPORAL_SERVER_VERSION}`);
  const missing = [server, sqlTool].filter((file) => !existsSync(file));
  if (missing.length && !goAvailable())
    throw new Error('building the Temporal server needs Go, which is not installed');
  mkdirSync(cacheDir(), { recursive: true });
  if (!existsSync(server))
    await goInstall(`go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}`, 'server', server, log);
  if (!existsSync(sqlTool)) {
    await goInstall(`go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`, 'sql', sqlTool, log);
  }
  return { server, sqlTool };
}

function sqlTool(tool: string, postgres: PostgresOptions, database: string, args: string[]): void {
  const connection = [
    '--plugin',
    'postgres12',
    '--ep',
    postgres.host,
    '-p',
    String(postgres.port),
    '-u',
    postgres.user,
  ];
  if (postgres.password) connection.push('--pw', postgres.password);
  const result = spawnSync(tool, [...connection, '--db', database, ...args], { encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(`temporal-sql-tool ${args.join(' ')} on ${database} failed:\n${result.stdout}\n${result.stderr}`);
  }
}

/** Creates the two databases and applies the server's embedded PostgreSQL schemas, as `temporal-sql-tool` does in production. */
export function setUpSchema(
  tool: string,
  postgres: PostgresOptions,
  databases: { main: string; visibility: string },
): void {
  for (const [database, schema] of [
    [databases.main, 'postgresql/v12/temporal'],
    [databases.visibility, 'postgresql/v12/visibility'],
  ] as const) {
    sqlTool(tool, postgres, database, ['create-database']);
    sqlTool(tool, postgres, database, ['setup-schema', '-v', '0.0']);
    sqlTool(tool, postgres, database, ['update-schema', '--schema-name', schema]);
  }
}

function serverConfig(
  root: string,
  postgres: PostgresOptions,
  databases: { main: string; visibility: string },
  ports: number[],
) {
  const [frontend, frontendHttp, history, matching, worker, m1, m2, m3, m4, metrics] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${postgres.host}:${postgres.port}`,
      connectProtocol: 'tcp',
      user: postgres.user,
      password: postgres.password ?? '',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (grpcPort: number, membershipPort: number, httpPort?: number) => ({
    rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...(httpPort ? { httpPort } : {}) },
  });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores: {
        'postgres-default': store(databases.main, 20),
        'postgres-visibility': store(databases.visibility, 5),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' },
      metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `127.0.0.1:${metrics}` } },
    },
    services: {
      frontend: rpc(frontend, m1, frontendHttp),
      history: rpc(history, m2),
      matching: rpc(matching, m3),
      worker: rpc(worker, m4),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${frontend}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: path.join(root, 'config', 'dynamicconfig.yaml'), pollInterval: '10s' },
  };
}

/**
 * Starts a Temporal server on PostgreSQL in fresh databases (named `melvin_<random>` so runs never collide), with the
 * `default` namespace and Melvin's search attributes; stopping it drops the databases again.
 */
export async function startPostgresTemporal(options: {
  postgres: PostgresOptions;
  log?: (line: string) => void;
}): Promise<TemporalServer & { databaseBytes(): Promise<number> }> {
  const log = options.log ?? ((line) => console.error(line));
  const tools = await temporalServerTools(log);
  const suffix = randomBytes(4).toString('hex');
  const databases = { main: `melvin_${suffix}`, visibility: `melvin_${suffix}_visibility` };
  setUpSchema(tools.sqlTool, options.postgres, databases);

  // The server keeps membership ports in a smallint column.
  const ports = await freePorts(10);
  const root = mkdtempSync(path.join(tmpdir(), 'melvin-temporal-'));
  mkdirSync(path.join(root, 'config'));
  // JSON is YAML: the server reads this as its `melvin` environment's config file.
  writeFileSync(
    path.join(root, 'config', 'melvin.yaml'),
    JSON.stringify(serverConfig(root, options.postgres, databases, ports), null, 2),
  );
  writeFileSync(path.join(root, 'config', 'dynamicconfig.yaml'), JSON.stringify(dynamicConfigFile(), null, 2));
  const server: ChildProcess = spawn(
    tools.server,
    ['--root', root, '--config', 'config', '--env', 'melvin', '--allow-no-auth', 'start'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  server.stdout!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));
  server.stderr!.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-20_000)));

  const address = `127.0.0.1:${ports[0]}`;
  const stop = async () => {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    for (const database of [databases.main, databases.visibility]) {
      try {
        sqlTool(tools.sqlTool, options.postgres, database, ['drop-database', '--force']);
      } catch (err) {
        log(`could not drop ${database}: ${errorMessage(err)}`);
      }
    }
  };

  let connection: Connection | undefined;
  try {
    connection = await waitFor(
      'the Temporal server to serve',
      async () => {
        if (server.exitCode !== null) throw new Error(`the Temporal server exited with ${server.exitCode}:\n${output}`);
        const candidate = await Connection.connect({ address, connectTimeout: 2_000 }).catch(() => undefined);
        const serving = await candidate?.workflowService.getSystemInfo({}).then(
          () => true,
          () => false,
        );
        if (!serving) await candidate?.close();
        return serving ? candidate : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    await registerNamespace(connection);
  } catch (err) {
    await connection?.close();
    await stop();
    throw err;
  }
  // Encrypted as in production, with a key of this server's own: its databases are dropped when it stops.
  const payloadKeys = [generatePayloadKey('topology')];
  const client = new Client({ connection, namespace: 'default', dataConverter: createDataConverter(payloadKeys) });
  return {
    address,
    uiUrl: null,
    pid: server.pid,
    payloadKeys,
    client,
    databaseBytes: () => databaseBytes(options.postgres, Object.values(databases)),
    stop: async () => {
      await connection.close();
      await stop();
    },
  };
}

/** What the server's databases take on disk (tables, indexes, TOAST; not the WAL), in bytes. */
async function databaseBytes(postgres: PostgresOptions, databases: string[]): Promise<number> {
  const client = new PgClient({ ...postgres, database: 'postgres' });
  await client.connect();
  try {
    const result = await client.query<{ bytes: string }>(
      'SELECT sum(pg_database_size(datname))::text AS bytes FROM pg_database WHERE datname = ANY($1)',
      [databases],
    );
    return Number(result.rows[0]!.bytes);
  } finally {
    await client.end();
  }
}

/** The `default` namespace and Melvin's search attributes, retried while the server's own system namespace comes up. */
async function registerNamespace(connection: Connection): Promise<void> {
  await waitFor(
    'the default namespace to be registered',
    () =>
      connection.workflowService
        .registerNamespace({ namespace: 'default', workflowExecutionRetentionPeriod: msToTs('3 days') })
        .then(
          () => true,
          (err: unknown) => /already exists|AlreadyExists/i.test(String(err)),
        ),
    { timeoutMs: 60_000, intervalMs: 1000 },
  );
  const { IndexedValueType } = temporal.api.enums.v1;
  const types: Record<string, number> = {
    KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  };
  await connection.operatorService.addSearchAttributes({
    namespace: 'default',
    searchAttributes: Object.fromEntries(allSearchAttributes.map((key) => [key.name, types[key.type]!])),
  });
  // Registering a namespace is eventually visible to every service: wait until it answers.
  await waitFor(
    'the default namespace to answer',
    () =>
      connection.workflowService.describeNamespace({ namespace: 'default' }).then(
        () => true,
        () => false,
      ),
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}
