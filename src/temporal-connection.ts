// Connection options for a Temporal cluster or Temporal Cloud from the configuration: TLS, mTLS and API key.
import fs from 'node:fs';
import { InterceptingCall, Metadata, status, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type TLSConfig } from '@temporalio/client';
import type { Config } from './config';

export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
}

type TlsConfig = Pick<
  Config,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CLIENT_CERT_PATH'
  | 'TEMPORAL_TLS_CLIENT_KEY_PATH'
  | 'TEMPORAL_TLS_SERVER_CA_CERT_PATH'
  | 'TEMPORAL_TLS_SERVER_NAME'
  | 'TEMPORAL_API_KEY'
>;

/** Options for `Connection.connect` and `NativeConnection.connect`. TLS is on when asked for, or implied by a cert, a CA or an API key. */
export function temporalConnectionOptions(config: TlsConfig): TemporalConnectionOptions {
  const explicit = config.TEMPORAL_TLS === undefined ? undefined : /^(true|1)$/.test(config.TEMPORAL_TLS);
  const tlsConfig: TLSConfig = {};
  if (config.TEMPORAL_TLS_CLIENT_CERT_PATH && config.TEMPORAL_TLS_CLIENT_KEY_PATH) {
    tlsConfig.clientCertPair = {
      crt: fs.readFileSync(config.TEMPORAL_TLS_CLIENT_CERT_PATH),
      key: fs.readFileSync(config.TEMPORAL_TLS_CLIENT_KEY_PATH),
    };
  }
  if (config.TEMPORAL_TLS_SERVER_CA_CERT_PATH)
    tlsConfig.serverRootCACertificate = fs.readFileSync(config.TEMPORAL_TLS_SERVER_CA_CERT_PATH);
  if (config.TEMPORAL_TLS_SERVER_NAME) tlsConfig.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
  const implied = Object.keys(tlsConfig).length > 0 || !!config.TEMPORAL_API_KEY;
  const on = explicit ?? implied;
  return {
    address: config.TEMPORAL_ADDRESS,
    ...(on ? { tls: Object.keys(tlsConfig).length > 0 ? tlsConfig : true } : explicit === false ? { tls: false } : {}),
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

type CallBelow = NonNullable<ConstructorParameters<typeof InterceptingCall>[0]>;

/**
 * A call that never reached the channel: it ends with CANCELLED as soon as it starts. Like grpc-js's own unary call,
 * it reports an empty reply (`null`) before the status: the SDK's retry interceptor above passes on the reply it
 * last saw when a call fails, and has none to pass on unless one came.
 */
function closedCall(details: string): CallBelow {
  return {
    start(_metadata, listener) {
      setImmediate(() => {
        listener?.onReceiveMessage?.(null);
        listener?.onReceiveStatus?.({ code: status.CANCELLED, details, metadata: new Metadata() });
      });
    },
    cancelWithStatus() {},
    getPeer: () => '',
    sendMessageWithContext() {},
    sendMessage() {},
    startRead() {},
    halfClose() {},
    getAuthContext: () => null,
  };
}

/**
 * The gRPC interceptors for a `Connection`: the SDK's retries, then a guard below them. The SDK schedules a retry on
 * a timer that `Connection.close()` leaves running; when it fires after the close, the channel throws from the timer
 * and the process dies of an uncaught exception. Under the guard, that retry ends its call with CANCELLED instead.
 */
export function grpcInterceptors(): Interceptor[] {
  const closedGuard: Interceptor = (options, nextCall) => {
    try {
      return new InterceptingCall(nextCall(options));
    } catch (err) {
      return new InterceptingCall(closedCall(`the Temporal connection was closed: ${(err as Error).message}`));
    }
  };
  return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), closedGuard];
}

/** Options for `Connection.connect` / `Connection.lazy`: the configuration's, with the interceptors above. */
export function clientConnectionOptions(
  config: TlsConfig,
): TemporalConnectionOptions & { interceptors: Interceptor[] } {
  return { ...temporalConnectionOptions(config), interceptors: grpcInterceptors() };
}
