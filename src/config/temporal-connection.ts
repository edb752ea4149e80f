// How every Melvin process (worker, ingress, CLI) talks to Temporal: the connection's address, TLS and API key, and the
// data converter that encrypts payloads, from the configuration the environment gave.
import type { TLSConfig } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { createDataConverter, type PayloadKey } from '../encryption/payload-codec';
import { TLS_SETTINGS, type TemporalConfig } from './environment';

type TemporalConnectionConfig = Pick<
  TemporalConfig,
  'TEMPORAL_ADDRESS' | 'TEMPORAL_API_KEY' | 'TEMPORAL_TLS' | (typeof TLS_SETTINGS)[number]
>;

/**
 * The TLS of a connection to Temporal: on with TEMPORAL_TLS=true, any TLS setting or an API key (Temporal Cloud takes
 * keys over TLS only); `false` when TEMPORAL_TLS=false, which the configuration allows only without any of those.
 */
function temporalTls(config: TemporalConnectionConfig): TLSConfig | false | undefined {
  if (config.TEMPORAL_TLS === 'false') return false;
  const wanted = config.TEMPORAL_TLS === 'true' || config.TEMPORAL_API_KEY || TLS_SETTINGS.some((name) => config[name]);
  if (!wanted) return undefined;
  const { TEMPORAL_TLS_CA: ca, TEMPORAL_TLS_CERT: cert, TEMPORAL_TLS_KEY: key } = config;
  return {
    ...(ca ? { serverRootCACertificate: ca.pem } : {}),
    ...(cert && key ? { clientCertPair: { crt: cert.pem, key: key.pem } } : {}),
    ...(config.TEMPORAL_TLS_SERVER_NAME ? { serverNameOverride: config.TEMPORAL_TLS_SERVER_NAME } : {}),
  };
}

/** How every Melvin process (worker, ingress, CLI) connects to Temporal, for `Connection` and `NativeConnection` alike. */
export function temporalConnectionOptions(config: TemporalConnectionConfig) {
  return { address: config.TEMPORAL_ADDRESS, tls: temporalTls(config), apiKey: config.TEMPORAL_API_KEY };
}

/**
 * The data converter of every Melvin process that talks to Temporal: payloads encrypted with MELVIN_PAYLOAD_KEYS (the
 * larger ones compressed first, unless MELVIN_PAYLOAD_COMPRESSION=off), and `readOnlyKeys` decrypting besides. Without
 * keys `warn` hears that nothing is encrypted: personal data then sits in Temporal in plain text.
 */
export function temporalDataConverter(
  config: Pick<TemporalConfig, 'MELVIN_PAYLOAD_KEYS'> & Partial<Pick<TemporalConfig, 'MELVIN_PAYLOAD_COMPRESSION'>>,
  options: { warn?: (warning: string) => void; readOnlyKeys?: readonly PayloadKey[] } = {},
): DataConverter {
  if (!config.MELVIN_PAYLOAD_KEYS) {
    options.warn?.(
      'payload encryption is off: MELVIN_PAYLOAD_KEYS is unset, so conversations are stored in plain text',
    );
  }
  return createDataConverter(config.MELVIN_PAYLOAD_KEYS, options.readOnlyKeys, {
    compress: config.MELVIN_PAYLOAD_COMPRESSION !== 'off',
  });
}
