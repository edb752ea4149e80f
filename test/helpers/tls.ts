// Test certificates made with the openssl CLI: a private CA, a server certificate for `temporal.test`, a client
// certificate it signed, and a key of nobody's certificate; plus a TLS front for a plaintext Temporal dev server.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

export const SERVER_NAME = 'temporal.test';

export interface TestCertificates {
  dir: string;
  /** File paths, as the TEMPORAL_TLS_* variables name them. */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  strayKey: string;
}

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), 'melvin-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    'req',
    '-x509',
    ...newKey,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Melvin test CA',
  );
  const signed = (name: string, subject: string, extensions: string) => {
    writeFileSync(file(`${name}.ext`), extensions);
    openssl('req', ...newKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    );
  };
  signed('server', `/CN=${SERVER_NAME}`, `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`);
  signed('client', '/CN=melvin-worker', 'extendedKeyUsage=clientAuth\n');
  openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'stray.key');
  return {
    dir,
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    strayKey: file('stray.key'),
  };
}

/**
 * A TLS front for a plaintext gRPC server, as a TLS-terminating proxy puts one before Temporal: it asks for a client
 * certificate signed by the test CA (mTLS) and passes the decrypted HTTP/2 stream through.
 */
export async function tlsFront(
  certificates: TestCertificates,
  upstream: string,
): Promise<{ address: string; close(): Promise<void> }> {
  const [host, port] = upstream.split(':') as [string, string];
  const sockets = new Set<net.Socket>();
  const server = tls.createServer(
    {
      key: readFileSync(certificates.serverKey),
      cert: readFileSync(certificates.serverCert),
      ca: readFileSync(certificates.ca),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      const backend = net.connect(Number(port), host);
      for (const s of [socket, backend]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
      }
      socket.on('error', () => backend.destroy());
      backend.on('error', () => socket.destroy());
      socket.pipe(backend).pipe(socket);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
