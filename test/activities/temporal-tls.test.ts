// Melvin's connections to Temporal over TLS with a client certificate (mTLS), as the TEMPORAL_TLS_* variables configure
// them: the dev server speaks no TLS itself, so a TLS front that requires a client certificate stands before it.
import { Connection } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { NativeConnection } from '@temporalio/worker';
import { loadTemporalConfig } from '../../src/config/environment';
import { temporalConnectionOptions } from '../../src/config/temporal-connection';
import { quietRuntime } from '../helpers/runtime';
import { startTemporal } from '../helpers/temporal';
import { SERVER_NAME, makeCertificates, tlsFront, type TestCertificates } from '../helpers/tls';

quietRuntime();

let env: TestWorkflowEnvironment;
let certs: TestCertificates;
let front: Awaited<ReturnType<typeof tlsFront>>;

beforeAll(async () => {
  env = await startTemporal();
  certs = makeCertificates();
  front = await tlsFront(certs, env.address);
}, 120_000);

afterAll(async () => {
  await front?.close();
  await env?.teardown();
});

const options = (withClientCertificate: boolean) =>
  temporalConnectionOptions(
    loadTemporalConfig({
      TEMPORAL_ADDRESS: front.address,
      TEMPORAL_TLS_CA: certs.ca,
      TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
      ...(withClientCertificate ? { TEMPORAL_TLS_CERT: certs.clientCert, TEMPORAL_TLS_KEY: certs.clientKey } : {}),
    }),
  );

test('the ingress’s and the CLI’s client connects over mTLS and reaches the server', async () => {
  const connection = await Connection.connect(options(true));
  try {
    const info = await connection.workflowService.getSystemInfo({});
    expect(info.capabilities).toBeTruthy();
  } finally {
    await connection.close();
  }
});

test('the worker’s native connection connects over mTLS', async () => {
  const connection = await NativeConnection.connect(options(true));
  await connection.close();
});

test('without the client certificate the TLS front refuses the connection', async () => {
  await expect(Connection.connect({ ...options(false), connectTimeout: 2_000 })).rejects.toThrow();
  await expect(NativeConnection.connect(options(false))).rejects.toThrow();
});
