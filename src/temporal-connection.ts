// Connection options for a Temporal cluster or Temporal Cloud from the configuration: TLS, mTLS and API key.
import fs from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import type { Config } from './config';

export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
}

type TlsConfig = Pick<
  Config,
  'TEMPORAL_ADDRESS' | 'TEMPORAL_TLS' | 'TEMPORAL_TLS_CLIENT_CERT_PATH' | 'TEMPORAL_TLS_CLIENT_KEY_PATH' | 'TEMPORAL_TLS_SERVER_CA_CERT_PATH' | 'TEMPORAL_TLS_SERVER_NAME' | 'TEMPORAL_API_KEY'
>;

/** Options for `Connection.connect` and `NativeConnection.connect`. TLS is on when asked for, or implied by a cert, a CA or an API key. */
export function temporalConnectionOptions(config: TlsConfig): TemporalConnectionOptions {
  const explicit = config.TEMPORAL_TLS === undefined ? undefined : /^(true|1)$/.test(config.TEMPORAL_TLS);
  const tlsConfig: TLSConfig = {};
  if (config.TEMPORAL_TLS_CLIENT_CERT_PATH && config.TEMPORAL_TLS_CLIENT_KEY_PATH) {
    tlsConfig.clientCertPair = { crt: fs.readFileSync(config.TEMPORAL_TLS_CLIENT_CERT_PATH), key: fs.readFileSync(config.TEMPORAL_TLS_CLIENT_KEY_PATH) };
  }
  if (config.TEMPORAL_TLS_SERVER_CA_CERT_PATH) tlsConfig.serverRootCACertificate = fs.readFileSync(config.TEMPORAL_TLS_SERVER_CA_CERT_PATH);
  if (config.TEMPORAL_TLS_SERVER_NAME) tlsConfig.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
  const implied = Object.keys(tlsConfig).length > 0 || !!config.TEMPORAL_API_KEY;
  const on = explicit ?? implied;
  return {
    address: config.TEMPORAL_ADDRESS,
    ...(on ? { tls: Object.keys(tlsConfig).length > 0 ? tlsConfig : true } : explicit === false ? { tls: false } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}
