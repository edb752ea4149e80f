// Payload encryption: the AES-256-GCM codec that keeps conversations' personal data out of Temporal's storage in plain
// text (compressing the larger payloads first), the key list it reads from MELVIN_PAYLOAD_KEYS, and the one data
// converter every Melvin worker and client uses.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';

/** The `encoding` of an encrypted payload; anything else is stored in plain text and decodes as it is. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** The metadata key naming the key a payload was encrypted with, so keys can rotate without re-encrypting history. */
export const KEY_ID_METADATA = 'encryption-key-id';

/**
 * The metadata key saying a payload was compressed (raw DEFLATE) before it was sealed. Its value is also the cipher's
 * additional authenticated data, so the flag cannot be added or removed without the payload failing to decrypt.
 */
export const COMPRESSION_METADATA = 'compression';
export const DEFLATE_RAW = 'deflate-raw';
/**
 * Payloads from this size are compressed, when that saves at least a tenth: a turn's larger payloads (the prompts, the
 * tool listing, the conversation, the model's inputs) are text that shrinks several times, a small one saves too little
 * for the time. Only before encryption: sealed bytes do not compress, and a plain payload stays readable in the UI.
 */
export const COMPRESS_FROM_BYTES = 1024;
const COMPRESSED_AT_MOST = 0.9;
/** Far above Temporal's payload limits: what a payload may inflate to before it is refused. */
const INFLATED_AT_MOST_BYTES = 64 * 1024 * 1024;

const IV_BYTES = 12;
const TAG_BYTES = 16;
const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();
/** The compression flag's bytes: its metadata value and the cipher's additional authenticated data. */
const DEFLATE_RAW_BYTES = textEncoder.encode(DEFLATE_RAW);

export interface PayloadKey {
  id: string;
  key: Buffer;
}

const PayloadKeyEntry = z
  .string()
  .trim()
  .regex(
    /^[A-Za-z0-9._-]{1,64}:[A-Za-z0-9+/_-]+={0,2}$/,
    'each key is <id>:<base64 of 32 bytes>, ids of 1-64 [A-Za-z0-9._-]',
  )
  .transform((entry, ctx): PayloadKey => {
    const [id, encoded] = entry.split(':') as [string, string];
    const key = Buffer.from(encoded, encoded.includes('-') || encoded.includes('_') ? 'base64url' : 'base64');
    if (key.length !== 32) {
      ctx.addIssue({ code: 'custom', message: `key "${id}" is ${key.length} bytes; AES-256 needs 32` });
      return z.NEVER;
    }
    return { id, key };
  });

/**
 * MELVIN_PAYLOAD_KEYS: `id:base64key` entries separated by commas. The first encrypts; every one decrypts the payloads
 * that name its id, so a new key goes first and the old ones stay until no stored history needs them.
 */
export const PayloadKeys = z.string().transform((value, ctx): PayloadKey[] => {
  const entries = value.split(',').filter((entry) => entry.trim() !== '');
  if (entries.length === 0) ctx.addIssue({ code: 'custom', message: 'lists no key' });
  const keys = entries.flatMap((entry, index) => {
    const parsed = PayloadKeyEntry.safeParse(entry);
    if (parsed.success) return [parsed.data];
    // The entry's position, never its text: that would print a key into a log.
    const where = entries.length > 1 ? `entry ${index + 1}: ` : '';
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: `${where}${issue.message}` });
    return [];
  });
  const ids = keys.map((k) => k.id);
  const repeated = ids.find((id, i) => ids.indexOf(id) !== i);
  if (repeated) ctx.addIssue({ code: 'custom', message: `key id "${repeated}" is used twice; ids must be unique` });
  return keys;
});

/** Keys as MELVIN_PAYLOAD_KEYS holds them, for a process that hands its keys to the processes it starts. */
export function formatPayloadKeys(keys: readonly PayloadKey[]): string {
  return keys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(',');
}

/** The variable that gives a started process these keys; none when encryption is off. */
export function payloadKeysEnvironment(keys: readonly PayloadKey[]): { MELVIN_PAYLOAD_KEYS?: string } {
  return keys.length ? { MELVIN_PAYLOAD_KEYS: formatPayloadKeys(keys) } : {};
}

/** A fresh random key, for a stack that keeps its history only as long as it runs (tests, evaluations). */
export function generatePayloadKey(id: string): PayloadKey {
  return { id, key: randomBytes(32) };
}

/** A payload this process cannot decrypt: its key is not configured, or the key or the data is wrong. */
export class PayloadKeyError extends Error {
  override name = 'PayloadKeyError';
}

/** A payload sealed with a key this process is not given: a configuration to fix, not data to throw away. */
export class MissingPayloadKeyError extends PayloadKeyError {
  override name = 'MissingPayloadKeyError';
}

/**
 * Encrypts each payload whole (metadata and data, so the encoding and type stay private too) with the current key,
 * compressed first when it is large enough to pay, and decrypts by the key id the payload names. Without keys it
 * encrypts nothing and still refuses, clearly, what it cannot read; plain payloads (histories from before encryption)
 * always pass through.
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;

  /**
   * `readOnly` keys decrypt and never encrypt: the CLI reads what `npm start` stored with its development key. Without
   * `compress` nothing new is compressed; compressed payloads still decode.
   */
  constructor(
    private readonly keyList: readonly PayloadKey[],
    readOnly: readonly PayloadKey[] = [],
    private readonly compress = true,
  ) {
    this.keys = new Map([...readOnly, ...keyList].map((k) => [k.id, k.key]));
  }

  /** The key new payloads are encrypted with; undefined when encryption is off. */
  get currentKeyId(): string | undefined {
    return this.keyList[0]?.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    const current = this.keyList[0];
    if (!current) return payloads;
    return payloads.map((payload) => {
      const plain = temporal.api.common.v1.Payload.encode(payload).finish();
      const compressed = this.compress && plain.length >= COMPRESS_FROM_BYTES ? deflateRawSync(plain) : undefined;
      const packed = compressed && compressed.length <= plain.length * COMPRESSED_AT_MOST ? compressed : undefined;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current.key, iv);
      if (packed) cipher.setAAD(DEFLATE_RAW_BYTES);
      const sealed = Buffer.concat([iv, cipher.update(packed ?? plain), cipher.final(), cipher.getAuthTag()]);
      return {
        metadata: {
          encoding: textEncoder.encode(ENCRYPTED_ENCODING),
          [KEY_ID_METADATA]: textEncoder.encode(current.id),
          ...(packed && { [COMPRESSION_METADATA]: DEFLATE_RAW_BYTES }),
        },
        data: sealed,
      };
    });
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || textDecoder.decode(encoding) !== ENCRYPTED_ENCODING) return payload;
      const idBytes = payload.metadata?.[KEY_ID_METADATA];
      const id = idBytes ? textDecoder.decode(idBytes) : '(none)';
      const key = this.keys.get(id);
      if (!key) {
        const held = this.keys.size
          ? `it holds ${[...this.keys.keys()].map((k) => `"${k}"`).join(', ')}`
          : 'it is unset';
        throw new MissingPayloadKeyError(
          `a payload is encrypted with key "${id}", which MELVIN_PAYLOAD_KEYS lacks (${held})`,
        );
      }
      const data = payload.data ?? new Uint8Array();
      if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadKeyError(`a payload under key "${id}" is truncated`);
      const compressionBytes = payload.metadata?.[COMPRESSION_METADATA];
      const compression = compressionBytes ? textDecoder.decode(compressionBytes) : undefined;
      if (compression !== undefined && compression !== DEFLATE_RAW) {
        throw new PayloadKeyError(
          `a payload under key "${id}" is compressed with "${compression}", which is unknown here`,
        );
      }
      let opened: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        if (compression) decipher.setAAD(compressionBytes!);
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        opened = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
      } catch {
        throw new PayloadKeyError(
          `a payload under key "${id}" does not decrypt: the key is not the one it was sealed with, or the data was altered`,
        );
      }
      // Authenticated, so only a holder of the key could have sealed bytes that do not inflate.
      const plain = compression ? inflateRawSync(opened, { maxOutputLength: INFLATED_AT_MOST_BYTES }) : opened;
      return temporal.api.common.v1.Payload.decode(plain) as Payload;
    });
  }
}

/**
 * The data converter of every Melvin worker and client: the default converters, then encryption. With keys, failures'
 * messages and stack traces are encoded as payloads too, so they are encrypted like the rest; without keys they stay
 * readable as before.
 */
export function createDataConverter(
  keys: readonly PayloadKey[] = [],
  readOnly: readonly PayloadKey[] = [],
  { compress = true }: { compress?: boolean } = {},
): DataConverter {
  const payloadCodecs = [new EncryptionCodec(keys, readOnly, compress)];
  if (keys.length === 0 && readOnly.length === 0) return { payloadCodecs };
  return { payloadCodecs, failureConverterPath: require.resolve('./failure-converter') };
}
