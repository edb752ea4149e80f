// The payload codec: what it stores is sealed and names its key, old keys read after a rotation, plain payloads pass
// through, and a wrong key or key list fails saying what is wrong.
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import {
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  loadDataConverter,
} from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import { loadTemporalConfig } from '../../src/config/environment';
import { randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import {
  COMPRESSION_METADATA,
  COMPRESS_FROM_BYTES,
  DEFLATE_RAW,
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  KEY_ID_METADATA,
  PayloadKeyError,
  PayloadKeys,
  createDataConverter,
  formatPayloadKeys,
  generatePayloadKey,
} from '../../src/encryption/payload-codec';

const MESSAGE = { text: 'When will I get paid?', email: 'ana.ruiz@example.com' };
const payload = () => defaultPayloadConverter.toPayload(MESSAGE);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
/** A payload's bytes as base64, to compare payloads whatever kind of byte array each holds. */
const bytesOf = (p: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

test('a round trip gives back the payload; what is stored names the key and shows none of the data', async () => {
  const codec = new EncryptionCodec([generatePayloadKey('k1')]);
  const [sealed] = await codec.encode([payload()]);
  expect(text(sealed!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
  expect(text(sealed!.metadata![KEY_ID_METADATA])).toBe('k1');
  expect(text(sealed!.data)).not.toContain(MESSAGE.email);
  expect(text(sealed!.data)).not.toContain('json/plain');
  const [opened] = await codec.decode([sealed!]);
  expect(defaultPayloadConverter.fromPayload(opened!)).toEqual(MESSAGE);
});

// Any payload: small or large, text that repeats (compresses) or random bytes (does not), any encoding and extra metadata.
const anyPayload = fc
  .record({
    encoding: fc.constantFrom('json/plain', 'binary/plain', 'binary/null'),
    extra: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 20 }), { maxKeys: 2 }),
    data: fc.oneof(
      fc.string({ maxLength: 64 }).map((t) => Buffer.from(t)),
      fc
        .tuple(fc.string({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 2_000 }))
        .map(([t, n]) => Buffer.from(t.repeat(n))),
      fc.integer({ min: 0, max: 8_000 }).map((n) => randomBytes(n)),
    ),
  })
  .map(({ encoding, extra, data }) => ({
    metadata: Object.fromEntries(
      Object.entries({ ...extra, encoding }).map(([k, v]) => [k, new Uint8Array(Buffer.from(v))]),
    ),
    data: new Uint8Array(data),
  }));

test('every payload comes back as it went in; compressed exactly when it is 1 KiB or more and shrinks by a tenth', async () => {
  const codec = new EncryptionCodec([generatePayloadKey('k1')]);
  await fc.assert(
    fc.asyncProperty(anyPayload, async (original) => {
      const [sealed] = await codec.encode([original]);
      const [opened] = await codec.decode([sealed!]);
      expect(bytesOf(opened!)).toEqual(bytesOf(original));
      const plain = temporal.api.common.v1.Payload.encode(original).finish();
      const plainBytes = plain.length;
      const compressed = sealed!.metadata![COMPRESSION_METADATA] !== undefined;
      const pays = plainBytes >= COMPRESS_FROM_BYTES && deflateRawSync(plain).length <= plainBytes * 0.9;
      expect({ plainBytes, compressed }).toEqual({ plainBytes, compressed: pays });
      if (compressed) expect(text(sealed!.metadata![COMPRESSION_METADATA])).toBe(DEFLATE_RAW);
      // Sealing adds the IV and the tag: a compressed payload is stored smaller than its plain encoding.
      if (compressed) expect(sealed!.data!.length).toBeLessThan(plainBytes);
    }),
    { numRuns: 200 },
  );
});

test('a large payload of text is stored several times smaller; random bytes are stored as they are', async () => {
  const codec = new EncryptionCodec([generatePayloadKey('k1')]);
  const prompt = defaultPayloadConverter.toPayload({ prompt: 'Answer the talent from the data only. '.repeat(400) });
  const noise = { metadata: { encoding: Buffer.from('binary/plain') }, data: randomBytes(16_000) };
  const [sealedPrompt, sealedNoise] = await codec.encode([prompt, noise]);
  expect(sealedPrompt!.data!.length * 4).toBeLessThan(prompt.data!.length);
  expect(sealedNoise!.metadata![COMPRESSION_METADATA]).toBeUndefined();
  expect(sealedNoise!.data!.length).toBeGreaterThan(noise.data.length);
});

test('the compression flag is authenticated: removed, added or unknown, the payload fails to decode', async () => {
  const codec = new EncryptionCodec([generatePayloadKey('k1')]);
  const large = defaultPayloadConverter.toPayload({ text: 'When will I get paid? '.repeat(200) });
  const [compressed, small] = await codec.encode([large, payload()]);
  const { [COMPRESSION_METADATA]: flag, ...withoutFlag } = compressed!.metadata!;
  expect(flag).toBeDefined();
  await expect(codec.decode([{ ...compressed!, metadata: withoutFlag }])).rejects.toThrow(/does not decrypt/);
  const flagged = { ...small!, metadata: { ...small!.metadata, [COMPRESSION_METADATA]: flag! } };
  await expect(codec.decode([flagged])).rejects.toThrow(/does not decrypt/);
  const unknown = {
    ...compressed!,
    metadata: { ...compressed!.metadata, [COMPRESSION_METADATA]: Buffer.from('zstd') },
  };
  await expect(codec.decode([unknown])).rejects.toThrow(
    new PayloadKeyError('a payload under key "k1" is compressed with "zstd", which is unknown here'),
  );
});

test('with compression off nothing new is compressed, and what was compressed still decodes', async () => {
  const key = generatePayloadKey('k1');
  const large = defaultPayloadConverter.toPayload({ text: 'When will I get paid? '.repeat(200) });
  const [compressed] = await new EncryptionCodec([key]).encode([large]);
  const off = new EncryptionCodec([key], [], false);
  const [uncompressed] = await off.encode([large]);
  expect(uncompressed!.metadata![COMPRESSION_METADATA]).toBeUndefined();
  expect((await off.decode([compressed!, uncompressed!])).map(bytesOf)).toEqual([bytesOf(large), bytesOf(large)]);
  const converter = createDataConverter([key], [], { compress: false });
  const [viaConverter] = await converter.payloadCodecs![0]!.encode([large]);
  expect(viaConverter!.metadata![COMPRESSION_METADATA]).toBeUndefined();
  expect(loadTemporalConfig({ MELVIN_PAYLOAD_COMPRESSION: 'off' }).MELVIN_PAYLOAD_COMPRESSION).toBe('off');
  expect(loadTemporalConfig({}).MELVIN_PAYLOAD_COMPRESSION).toBe('on');
  expect(() => loadTemporalConfig({ MELVIN_PAYLOAD_COMPRESSION: 'yes' })).toThrow(/MELVIN_PAYLOAD_COMPRESSION/);
});

test('the same payload encrypts differently each time (a fresh IV)', async () => {
  const codec = new EncryptionCodec([generatePayloadKey('k1')]);
  const [a, b] = await codec.encode([payload(), payload()]);
  expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
});

test('after a rotation the new key encrypts and payloads under the old key id still decode', async () => {
  const old = generatePayloadKey('2026-01');
  const [sealedBefore] = await new EncryptionCodec([old]).encode([payload()]);
  const rotated = new EncryptionCodec([generatePayloadKey('2026-06'), old]);
  const [sealedAfter] = await rotated.encode([payload()]);
  expect(text(sealedAfter!.metadata![KEY_ID_METADATA])).toBe('2026-06');
  const opened = await rotated.decode([sealedBefore!, sealedAfter!]);
  expect(opened.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([MESSAGE, MESSAGE]);
});

test('a payload under an unknown key id, or sealed with another key of the same id, fails clearly', async () => {
  const [sealed] = await new EncryptionCodec([generatePayloadKey('gone')]).encode([payload()]);
  await expect(new EncryptionCodec([generatePayloadKey('current')]).decode([sealed!])).rejects.toThrow(
    new PayloadKeyError('a payload is encrypted with key "gone", which MELVIN_PAYLOAD_KEYS lacks (it holds "current")'),
  );
  await expect(new EncryptionCodec([]).decode([sealed!])).rejects.toThrow(/key "gone", .*\(it is unset\)/);
  await expect(new EncryptionCodec([generatePayloadKey('gone')]).decode([sealed!])).rejects.toThrow(
    /under key "gone" does not decrypt: the key is not the one it was sealed with, or the data was altered/,
  );
});

test('altered data does not decrypt', async () => {
  const codec = new EncryptionCodec([generatePayloadKey('k1')]);
  const [sealed] = await codec.encode([payload()]);
  const data = Buffer.from(sealed!.data!);
  data[20] = data[20]! ^ 1;
  await expect(codec.decode([{ ...sealed!, data }])).rejects.toBeInstanceOf(PayloadKeyError);
});

test('plain payloads (histories from before encryption) pass through; without keys nothing is encrypted', async () => {
  const plain = payload();
  expect(await new EncryptionCodec([generatePayloadKey('k1')]).decode([plain])).toEqual([plain]);
  expect(await new EncryptionCodec([]).encode([plain])).toEqual([plain]);
});

test('read-only keys decrypt and never encrypt', async () => {
  const dev = generatePayloadKey('dev');
  const [sealed] = await new EncryptionCodec([dev]).encode([payload()]);
  const tool = new EncryptionCodec([], [dev]);
  expect(defaultPayloadConverter.fromPayload((await tool.decode([sealed!]))[0]!)).toEqual(MESSAGE);
  expect(await tool.encode([payload()])).toEqual([payload()]);
});

test('MELVIN_PAYLOAD_KEYS reads back what formatPayloadKeys writes, first key first', () => {
  const keys = [generatePayloadKey('new'), generatePayloadKey('old')];
  expect(PayloadKeys.parse(formatPayloadKeys(keys))).toEqual(keys);
});

test.each([
  ['k1:' + Buffer.alloc(16).toString('base64'), 'key "k1" is 16 bytes; AES-256 needs 32'],
  [
    `k1:${Buffer.alloc(32).toString('base64')},k1:${Buffer.alloc(32, 1).toString('base64')}`,
    'key id "k1" is used twice; ids must be unique',
  ],
  ['just-a-key', 'each key is <id>:<base64 of 32 bytes>'],
  [' , ', 'lists no key'],
])('a bad key list %p fails with the variable named: %s', (value, problem) => {
  expect(() => loadTemporalConfig({ MELVIN_PAYLOAD_KEYS: value })).toThrow(
    expect.objectContaining({
      name: 'ConfigError',
      message: expect.stringContaining(`MELVIN_PAYLOAD_KEYS: ${problem}`),
    }),
  );
});

test('MELVIN_PAYLOAD_ENCRYPTION=required refuses to start without keys', () => {
  expect(() => loadTemporalConfig({ MELVIN_PAYLOAD_ENCRYPTION: 'required' })).toThrow(
    /MELVIN_PAYLOAD_KEYS: required while MELVIN_PAYLOAD_ENCRYPTION=required/,
  );
  const key = formatPayloadKeys([generatePayloadKey('k1')]);
  expect(
    loadTemporalConfig({ MELVIN_PAYLOAD_ENCRYPTION: 'required', MELVIN_PAYLOAD_KEYS: key }).MELVIN_PAYLOAD_KEYS,
  ).toHaveLength(1);
  expect(loadTemporalConfig({}).MELVIN_PAYLOAD_KEYS).toBeUndefined();
});

test('with keys, a failure’s message and stack trace are encrypted too; without keys they stay as they were', async () => {
  const error = new Error(`the tool answered: ${MESSAGE.email} asked "${MESSAGE.text}"`);
  const encrypted = loadDataConverter(createDataConverter([generatePayloadKey('k1')]));
  const sealed = await encodeErrorToFailure(encrypted, error);
  expect(JSON.stringify(sealed)).not.toContain(MESSAGE.email);
  expect(sealed.message).toBe('Encoded failure');
  const opened = await decodeOptionalFailureToOptionalError(encrypted, sealed);
  expect(opened?.message).toBe(error.message);

  const plain = await encodeErrorToFailure(loadDataConverter(createDataConverter()), error);
  expect(plain.message).toBe(error.message);
});
