// The TEMPORAL_TLS_* variables: checked together at start-up with errors that name the variable, and turned into the
// one `tls` option every connection to Temporal uses.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadIngressConfig, loadTemporalConfig, loadWorkerConfig } from '../../src/config/environment';
import { temporalConnectionOptions } from '../../src/config/temporal-connection';
import { SERVER_NAME, makeCertificates, type TestCertificates } from '../helpers/tls';

let certs: TestCertificates;

beforeAll(() => {
  certs = makeCertificates();
});

const configError = (env: NodeJS.ProcessEnv) => {
  try {
    loadTemporalConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected the configuration to be refused');
};

test('without TLS variables the connection is plaintext; an API key alone switches TLS on, TEMPORAL_TLS=false off', () => {
  expect(temporalConnectionOptions(loadTemporalConfig({}))).toEqual({
    address: '127.0.0.1:7233',
    tls: undefined,
    apiKey: undefined,
  });
  expect(temporalConnectionOptions(loadTemporalConfig({ TEMPORAL_API_KEY: 'k' })).tls).toEqual({});
  expect(temporalConnectionOptions(loadTemporalConfig({ TEMPORAL_TLS: 'true' })).tls).toEqual({});
  expect(temporalConnectionOptions(loadTemporalConfig({ TEMPORAL_TLS: 'false' })).tls).toBe(false);
});

test('the CA, the client certificate pair and the server name become the connection’s TLS options', () => {
  const config = loadTemporalConfig({
    TEMPORAL_ADDRESS: 'temporal.internal:7233',
    TEMPORAL_TLS_CA: certs.ca,
    TEMPORAL_TLS_CERT: certs.clientCert,
    TEMPORAL_TLS_KEY: certs.clientKey,
    TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
  });
  expect(temporalConnectionOptions(config)).toEqual({
    address: 'temporal.internal:7233',
    apiKey: undefined,
    tls: {
      serverRootCACertificate: readFileSync(certs.ca),
      clientCertPair: { crt: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) },
      serverNameOverride: SERVER_NAME,
    },
  });
  // A CA alone is server-verified TLS without a client certificate.
  expect(temporalConnectionOptions(loadTemporalConfig({ TEMPORAL_TLS_CA: certs.ca })).tls).toEqual({
    serverRootCACertificate: readFileSync(certs.ca),
  });
});

test('a certificate without its key, a key without its certificate, or a key of another certificate is refused', () => {
  expect(configError({ TEMPORAL_TLS_CERT: certs.clientCert })).toContain(
    'TEMPORAL_TLS_KEY: required with TEMPORAL_TLS_CERT',
  );
  expect(configError({ TEMPORAL_TLS_KEY: certs.clientKey })).toContain(
    'TEMPORAL_TLS_CERT: required with TEMPORAL_TLS_KEY',
  );
  expect(configError({ TEMPORAL_TLS_CERT: certs.clientCert, TEMPORAL_TLS_KEY: certs.strayKey })).toContain(
    `TEMPORAL_TLS_KEY: ${certs.strayKey} is not the private key of the certificate in ${certs.clientCert}`,
  );
});

test('a missing file, a file of the wrong kind, and TLS settings with TEMPORAL_TLS=false are refused, named', () => {
  const missing = path.join(certs.dir, 'nowhere.pem');
  expect(configError({ TEMPORAL_TLS_CA: missing })).toContain(`TEMPORAL_TLS_CA: cannot read ${missing}: ENOENT`);
  const notPem = path.join(certs.dir, 'not.pem');
  writeFileSync(notPem, 'hello');
  expect(configError({ TEMPORAL_TLS_CA: notPem })).toContain(`TEMPORAL_TLS_CA: ${notPem} holds no PEM certificate`);
  expect(configError({ TEMPORAL_TLS_CERT: certs.clientKey, TEMPORAL_TLS_KEY: certs.clientKey })).toContain(
    `TEMPORAL_TLS_CERT: ${certs.clientKey} holds no PEM certificate`,
  );
  expect(configError({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA: certs.ca })).toContain(
    'TEMPORAL_TLS: is false, but TEMPORAL_TLS_CA is set: they need TLS',
  );
  expect(configError({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toContain(
    'TEMPORAL_TLS: is false, but TEMPORAL_API_KEY is set: they need TLS',
  );
});

test('the worker and the ingress check the TLS variables as the CLI does', () => {
  const worker = {
    INTERCOM_API_KEY: 'k',
    MCP_SERVERS: 'talent=http://127.0.0.1:8765/mcp',
    OPENAI_API_KEY: 'k',
    VALIDATION_ENDPOINT: 'http://127.0.0.1:8766/validate',
    VALIDATION_API_KEY: 'k',
  };
  expect(() => loadWorkerConfig({ ...worker, TEMPORAL_TLS_CERT: certs.clientCert })).toThrow(
    'TEMPORAL_TLS_KEY: required with TEMPORAL_TLS_CERT',
  );
  expect(() => loadIngressConfig({ INTERCOM_CLIENT_SECRET: 's', TEMPORAL_TLS_KEY: certs.clientKey })).toThrow(
    'TEMPORAL_TLS_CERT: required with TEMPORAL_TLS_KEY',
  );
  const ingress = loadIngressConfig({ INTERCOM_CLIENT_SECRET: 's', TEMPORAL_TLS_CA: certs.ca });
  expect(temporalConnectionOptions(ingress).tls).toEqual({ serverRootCACertificate: readFileSync(certs.ca) });
});
