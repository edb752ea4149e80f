// The development payload key of `npm start`: made once per data directory, so a local stack encrypts with no
// configuration and its history stays readable across restarts.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import type { TemporalConfig } from './environment';
import { temporalDataConverter } from './temporal-connection';
import { PayloadKeys, formatPayloadKeys, generatePayloadKey, type PayloadKey } from '../encryption/payload-codec';

/** Where `npm start` keeps its key: beside its SQLite history, which is worthless without it. */
export function devPayloadKeysFile(dataDir: string): string {
  return path.join(dataDir, 'payload-keys');
}

/** The data directory `npm start` uses: MELVIN_DATA_DIR, else `.data` in the repository. */
export function devDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.MELVIN_DATA_DIR || path.resolve(__dirname, '..', '..', '.data');
}

/** The keys in the data directory's file; undefined when `npm start` has not made one there. */
export function readDevPayloadKeys(dataDir: string): PayloadKey[] | undefined {
  const file = devPayloadKeysFile(dataDir);
  if (!existsSync(file)) return undefined;
  const parsed = PayloadKeys.safeParse(readFileSync(file, 'utf8').trim());
  if (!parsed.success) throw new Error(`${file} holds no valid payload key: ${parsed.error.issues[0]!.message}`);
  return parsed.data;
}

/** The data directory's keys, made (one random key, readable by this user only) on its first use. */
export function ensureDevPayloadKeys(dataDir: string): PayloadKey[] {
  const existing = readDevPayloadKeys(dataDir);
  if (existing) return existing;
  const keys = [generatePayloadKey(`dev-${new Date().toISOString().slice(0, 10)}`)];
  // The first start on a fresh clone comes before the dev server has made its data directory.
  mkdirSync(dataDir, { recursive: true });
  const file = devPayloadKeysFile(dataDir);
  writeFileSync(file, `${formatPayloadKeys(keys)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return keys;
}

/**
 * The data converter of the tools a person runs beside a stack (the CLI, the scenario runner): the configured keys,
 * and `npm start`'s development key to read what it stored on this machine with no configuration. That key never
 * encrypts here, so a tool pointed at another Temporal cannot write what its workers could not read.
 */
export function toolDataConverter(config: Pick<TemporalConfig, 'MELVIN_PAYLOAD_KEYS'>): DataConverter {
  return temporalDataConverter(config, { readOnlyKeys: readDevPayloadKeys(devDataDir()) });
}
