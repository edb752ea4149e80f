// The payload codec: what it stores is sealed and names its key, old keys read after a rotation, plain payloads pass
// through, and a wrong key or key list fails saying what is wrong.
import { defaultPayloadConverter } from '@temporalio/common';
import {
  decodeOptionalFailureToOptionalError,
  encodeErrorToFailure,
  loadDataConverter,
} from '@temporalio/common/lib/internal-non-workflow';
import { loadTemporalConfig } from '../../src/config/environment';
import {
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
