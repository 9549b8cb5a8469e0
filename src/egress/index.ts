// The egress gate: one door for every connection made on behalf of what arrived through the API (docs/security.md).
import { EgressGate, EgressRefusedError, noLookupResolver, systemResolver, type Resolver } from './gate';
import { canonicalIp } from './ranges';
import { interfaceAddresses, makePolicy, ownAddress, type EgressPolicy, type OwnAddress } from './egress-policy';

export { EgressGate, EgressRefusedError, noLookupResolver, systemResolver, type Resolver } from './gate';
export {
  checkAddress,
  checkUrl,
  makePolicy,
  parseAllowList,
  type Decision,
  type EgressPolicy,
  type EgressRule,
  type UrlDecision,
} from './egress-policy';
export { canonicalIp } from './ranges';

/** The settings (src/config.ts) the gate reads: the allow list, DNS on or off, and the platform's own addresses. */
type EgressSettings = Partial<
  Record<
    | 'EGRESS_ALLOW'
    | 'EGRESS_DNS'
    | 'DATABASE_URL'
    | 'TEMPORAL_ADDRESS'
    | 'API_LISTEN'
    | 'STREAM_LISTEN'
    | 'STREAM_URL'
    | 'AGENTS_API_URL'
    | 'OTEL_EXPORTER_OTLP_ENDPOINT'
    | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
    | 'ANTHROPIC_BASE_URL',
    string
  >
>;

/** The platform's own listen addresses, as this process's configuration names them. */
export function ownAddresses(config: EgressSettings): OwnAddress[] {
  const db = config.DATABASE_URL ? ownAddress(config.DATABASE_URL, 'PostgreSQL (DATABASE_URL)', 5432) : undefined;
  return [
    ownAddress(config.TEMPORAL_ADDRESS, 'the Temporal frontend (TEMPORAL_ADDRESS)'),
    ownAddress(config.API_LISTEN, 'the Managed Agents API (API_LISTEN)'),
    ownAddress(config.STREAM_LISTEN, 'a worker stream endpoint (STREAM_LISTEN)'),
    ownAddress(config.STREAM_URL, 'a worker stream endpoint (STREAM_URL)'),
    ownAddress(config.AGENTS_API_URL, 'the Managed Agents API (AGENTS_API_URL)'),
    ownAddress(config.OTEL_EXPORTER_OTLP_ENDPOINT, 'the OpenTelemetry collector (OTEL_EXPORTER_OTLP_ENDPOINT)'),
    ownAddress(
      config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
      'the OpenTelemetry collector (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)',
    ),
    ownAddress(config.ANTHROPIC_BASE_URL, 'the model endpoint (ANTHROPIC_BASE_URL)'),
    db,
  ].filter((o): o is OwnAddress => o !== undefined);
}

/**
 * The gate for this process: EGRESS_ALLOW, the platform's own addresses (names among them resolved once, here, so
 * their addresses are refused too), and this host's interface addresses. With EGRESS_DNS=off it looks up no name.
 */
export async function egressGate(
  config: EgressSettings,
  resolver: Resolver = systemResolver(3000),
): Promise<EgressGate> {
  const noDns = config.EGRESS_DNS === 'off';
  if (noDns) resolver = noLookupResolver;
  const own = ownAddresses(config);
  const policy: EgressPolicy = makePolicy(config.EGRESS_ALLOW, own, interfaceAddresses());
  for (const o of own) {
    if (/^[\d.]+$/.test(o.host) || o.host.includes(':')) continue;
    const resolved = await resolver(o.host).catch(() => [] as string[]);
    for (const address of resolved) policy.own.push({ ...o, host: canonicalIp(address) ?? address });
  }
  return noDns ? new EgressGate(policy, noLookupResolver) : new EgressGate(policy);
}

/** Whether an error is the gate's refusal. */
export const isEgressRefusal = (err: unknown): err is EgressRefusedError => err instanceof EgressRefusedError;
