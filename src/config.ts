// Process configuration from the environment, validated once; the error names every bad variable.
import { z } from 'zod';
import fs from 'node:fs';
import path from 'node:path';
import { codecKeyProblem } from './codec/codec-keys';
import { LOG_LEVELS } from './observability/log-levels';
import { parsePriceTable } from './observability/pricing';
import { SandboxRuntimePreferenceSchema } from './sandbox/runtime';
import { parseAllowList } from './egress/egress-policy';
import { PlatformError } from './session/platform-error';

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

const base64Key = optional.refine(
  (v) => v === undefined || Buffer.from(v, 'base64').length === 32,
  'must be base64 of 32 bytes',
);

const readableFile = optional.refine((v) => v === undefined || isReadableFile(v), 'must name a readable file');

function isReadableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

const seconds1to86400 = z
  .string()
  .regex(/^\d{1,5}$/, 'must be a whole number of seconds from 1 to 86400')
  .refine((v) => Number(v) >= 1 && Number(v) <= 86400, 'must be a whole number of seconds from 1 to 86400');

export const ConfigSchema = z.object({
  TEMPORAL_ADDRESS: z
    .string()
    .regex(/^[^:\s]+:\d+$/, 'must be HOST:PORT')
    .default('localhost:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  // A Temporal cluster or Temporal Cloud: TLS (mTLS with a client pair) and/or an API key (which implies TLS).
  TEMPORAL_TLS: optional.refine((v) => v === undefined || /^(true|false|1|0)$/.test(v), 'must be true or false'),
  TEMPORAL_TLS_CLIENT_CERT_PATH: readableFile,
  TEMPORAL_TLS_CLIENT_KEY_PATH: readableFile,
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: readableFile,
  TEMPORAL_TLS_SERVER_NAME: optional,
  TEMPORAL_API_KEY: optional,
  ANTHROPIC_API_KEY: optional,
  ANTHROPIC_BASE_URL: optional.refine((v) => v === undefined || /^https?:\/\//.test(v), 'must be an http(s) URL'),
  AGENT_MODEL: optional,
  DOCKER_HOST: optional,
  SANDBOX_IMAGE: optional,
  /** Sandboxes' OCI runtime: `auto` (gVisor where the engine has it, else runc, recorded as loosened), `runsc` or `runc`. */
  SANDBOX_RUNTIME: SandboxRuntimePreferenceSchema.default('auto'),
  /** `bwrap`: stdio MCP servers run in a bubblewrap jail as an unprivileged user; `off` runs them as the worker. */
  MCP_STDIO_JAIL: z.enum(['bwrap', 'off'], { error: 'must be bwrap or off' }).default('bwrap'),
  HANDS_HOST_ID: optional.refine(
    (v) => v === undefined || /^[A-Za-z0-9._-]{1,100}$/.test(v),
    'must be 1-100 letters, digits, dot, dash or underscore',
  ),
  VAULT_KEY: base64Key,
  /** The public half of VAULT_KEY (`agents vault public-key`): the API seals credentials to it and cannot open them. */
  VAULT_PUBLIC_KEY: base64Key,
  // One base64 key, or `id:base64,...` whose first key encrypts and the rest still decrypt (rotation).
  CODEC_KEY: optional.superRefine((v, ctx) => {
    const problem = v === undefined ? undefined : codecKeyProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  CODEC_SERVER_TOKEN: optional,
  DATA_DIR: z.string().min(1).default('.data'),
  /** PostgreSQL for the API's resources and the session archive, shared by every host; unset, an embedded database (PGlite) under DATA_DIR/api-db and the archive under DATA_DIR/archive. */
  DATABASE_URL: optional.refine((v) => v === undefined || /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL'),
  /** Where `agents api` listens. */
  API_LISTEN: z
    .string()
    .regex(/^[^\s]+:\d{1,5}$/, 'must be HOST:PORT (port 0 picks a free one)')
    .default('127.0.0.1:8480'),
  // `off`: keys come only from the environment; nothing is generated into or read from DATA_DIR/keys. Set in
  // containers, where each replica generating its own key would leave workers unable to read each other's payloads.
  /** Requests per key per window: `N` a minute, or `N/Ss` per S seconds (`20/10s`); `0` or `off` disables it. Counted per API process. */
  API_RATE_LIMIT: z
    .string()
    .regex(
      /^(off|\d{1,7}(\/\d{1,5}s)?)$/,
      'must be a number of requests a minute, N/Ss (requests per S seconds), or off',
    )
    .default('600'),
  /** Sessions a workspace may have open (running or idle) at once, across every API process; `0` or `off` disables it. */
  API_SESSION_QUOTA: z
    .string()
    .regex(/^(off|\d{1,7})$/, 'must be a whole number, or off')
    .default('100'),
  /** Events one `events.send` may carry. */
  API_EVENTS_PER_SEND: z
    .string()
    .regex(/^\d{1,4}$/, 'must be a whole number from 1 to 1000')
    .refine((v) => Number(v) >= 1 && Number(v) <= 1000, 'must be a whole number from 1 to 1000')
    .default('50'),
  /** The largest file `files.upload` takes, in bytes, up to the blob limit (100 MiB). */
  FILES_MAX_BYTES: z
    .string()
    .regex(/^\d{1,9}$/, 'must be a whole number of bytes from 1 to 104857600')
    .refine((v) => Number(v) >= 1 && Number(v) <= 104857600, 'must be a whole number of bytes from 1 to 104857600')
    .default('104857600'),
  /** Seconds a session of a self-hosted environment waits for its worker's answer to a toolset call before an error result. */
  SELF_HOSTED_TOOL_TIMEOUT_SECONDS: z
    .string()
    .regex(/^\d{1,5}$/, 'must be a whole number of seconds from 1 to 86400')
    .refine((v) => Number(v) >= 1 && Number(v) <= 86_400, 'must be a whole number of seconds from 1 to 86400')
    .default('120'),
  /** Bytes of live files (uploads and session outputs) a workspace may hold; `0` or `off` disables it. */
  STORAGE_QUOTA_BYTES: z
    .string()
    .regex(/^(off|\d{1,15})$/, 'must be a whole number of bytes, or off')
    .default('off'),
  /** Self-hosted work queue: the lease a heartbeat grants when the worker asks for none, in seconds. */
  WORK_LEASE_TTL_SECONDS: seconds1to86400.default('30'),
  /** The shortest lease a heartbeat's `desired_ttl_seconds` may ask for; shorter asks are raised to it. */
  WORK_LEASE_MIN_TTL_SECONDS: seconds1to86400.default('10'),
  /** The longest lease a heartbeat's `desired_ttl_seconds` may ask for; longer asks are cut to it. */
  WORK_LEASE_MAX_TTL_SECONDS: seconds1to86400.default('600'),
  /**
   * Deployments: how long after a missed firing (the cluster was down at its time) its Schedule still takes it, in
   * seconds from 10 to 31536000; older firings are skipped and record no run (docs/guide/deployments.md).
   */
  DEPLOYMENT_CATCHUP_WINDOW_SECONDS: z
    .string()
    .regex(/^\d{1,8}$/, 'must be a whole number of seconds from 10 to 31536000')
    .refine((v) => Number(v) >= 10 && Number(v) <= 31_536_000, 'must be a whole number of seconds from 10 to 31536000')
    .default('300'),
  /**
   * Deployments: what a firing does while the deployment's previous one is still starting its session: `buffer_all`
   * runs each in turn, `buffer_one` keeps at most one waiting, `skip` drops it, `allow_all` runs them side by side.
   */
  DEPLOYMENT_OVERLAP_POLICY: z
    .enum(['skip', 'buffer_one', 'buffer_all', 'allow_all'], {
      error: 'must be skip, buffer_one, buffer_all or allow_all',
    })
    .default('buffer_all'),
  /** Sandboxes a workspace may have running at once, across every hands host that reaches the API's database; `0` or `off` disables it. */
  SANDBOX_QUOTA: z
    .string()
    .regex(/^(off|\d{1,7})$/, 'must be a whole number, or off')
    .default('20'),
  /**
   * Workspace snapshots (docs/guide/workspace-snapshots.md): the most a sandbox's workspace may hold to be captured, in
   * bytes; also the most a paused sandbox's home directory may hold to be kept.
   */
  SNAPSHOT_MAX_BYTES: z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number of bytes')
    .default(String(1024 * 1024 * 1024)),
  /** Snapshots kept per sandbox, newest first; `0` turns capture off. */
  SNAPSHOT_RETAIN: z
    .string()
    .regex(/^\d{1,4}$/, 'must be a whole number from 0 to 9999')
    .default('10'),
  /** The most one workspace's snapshot chunks may take in the API's database, over all its sessions, in bytes. */
  SNAPSHOT_WORKSPACE_MAX_BYTES: z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number of bytes')
    .default(String(10 * 1024 * 1024 * 1024)),
  KEY_FILES: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  TEMPORAL_CLI: optional,
  // Brain and hands workers publish live deltas for `agents watch` here; `off` turns it off.
  STREAM_LISTEN: z
    .string()
    .regex(/^(off|[^\s]+:\d{1,5})$/, 'must be HOST:PORT (port 0 picks a free one) or off')
    .default('127.0.0.1:0'),
  STREAM_URL: optional.refine(
    (v) => v === undefined || /^https?:\/\/[^\s/]+\/?$/.test(v),
    'must be an http(s) URL with no path, e.g. http://brain-1:7400',
  ),
  /** The Managed Agents API (`agents api`) the CLI takes live previews from, relayed, instead of from each worker. */
  AGENTS_API_URL: optional.refine(
    (v) => v === undefined || /^https?:\/\/[^\s/]+\/?$/.test(v),
    'must be an http(s) URL with no path, e.g. http://127.0.0.1:8480',
  ),
  /** An API key of the session's workspace, for AGENTS_API_URL. */
  AGENTS_API_KEY: optional,
  /**
   * Brain: how many sessions a worker keeps in its workflow cache. A session out of the cache costs no memory; its
   * next task replays its current run's history, which handovers bound. Unset: 150.
   */
  BRAIN_WORKFLOW_CACHE: optional.refine(
    (v) => v === undefined || (/^\d+$/.test(v) && Number(v) >= 2 && Number(v) <= 100_000),
    'must be a whole number from 2 to 100000',
  ),
  /**
   * Brain: the heap limit of the thread that runs the cached sessions, in MiB; past it, garbage is collected
   * rather than the heap grown. Unset: 320 + 2 MiB per cached session.
   */
  BRAIN_WORKFLOW_HEAP_MB: optional.refine(
    (v) => v === undefined || (/^\d+$/.test(v) && Number(v) >= 256 && Number(v) <= 1_000_000),
    'must be a whole number of MiB, at least 256',
  ),
  /**
   * Brain: `on` records a stack for every promise a session's workflow code creates, which the Temporal Web UI's
   * Stack Trace tab (the `__stack_trace` query) shows; the workflow code then takes about 1.5 times as long. `off`:
   * the query answers that stack traces are not enabled; errors keep their stacks either way.
   */
  BRAIN_WORKFLOW_STACK_TRACES: z.enum(['on', 'off'], { error: 'must be on or off' }).default('off'),
  /**
   * Brain: `on` calls into a session's workflow code with the SDK's 5 s timeout, which turns a loop in workflow code
   * into a failed workflow task, in every call. `off` leaves it out of the calls that replay history (a session that
   * was out of the cache), where each call starts a watchdog thread: replays take about 0.7 of the CPU, and a loop
   * that only a replay runs into holds the workflow thread.
   */
  BRAIN_REPLAY_WATCHDOG: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  /**
   * Brain: `on` follows the other brain workers' running activities and retries those of one that exits at once
   * (src/brain/peer-liveness.ts); `off` leaves a dead worker's calls to their heartbeat timeout. Needs STREAM_LISTEN.
   */
  BRAIN_PEER_WATCH: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  /**
   * What the egress gate opens for connections made on a tenant's behalf (MCP servers, token endpoints, repositories):
   * comma-separated `host`, `host:port` or CIDR entries. Unset: loopback, link-local, private, CGNAT, multicast,
   * reserved and the platform's own addresses are all refused.
   */
  EGRESS_ALLOW: optional.superRefine((v, ctx) => {
    for (const problem of parseAllowList(v).problems) ctx.addIssue({ code: 'custom', message: problem });
  }),
  /**
   * `off`: the egress gate looks up no name (no DNS query), so a tenant URL must name an address; for closed
   * networks, and the test suites, which send no traffic past loopback.
   */
  EGRESS_DNS: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  /**
   * Tools: seconds between a webhook delivery's failed attempt and the next, comma-separated; their number is the
   * number of retries. Unset: Standard Webhooks' schedule, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
   */
  WEBHOOK_RETRY_DELAYS: optional.refine(
    (v) => v === undefined || /^\d{1,6}(,\d{1,6}){0,19}$/.test(v.replace(/\s/g, '')),
    'must be up to 20 comma-separated whole numbers of seconds, e.g. 5,300,1800',
  ),
  /** Tools: consecutive failed delivery attempts after which a webhook endpoint is disabled, with the reason. */
  WEBHOOK_DISABLE_AFTER: z
    .string()
    .regex(/^\d{1,5}$/, 'must be a whole number from 1 to 99999')
    .refine((v) => Number(v) >= 1, 'must be a whole number from 1 to 99999')
    .default('30'),
  /** Tools: how often the webhook relay looks for new events in the outbox, in milliseconds. */
  WEBHOOK_RELAY_INTERVAL_MS: z
    .string()
    .regex(/^\d{2,6}$/, 'must be a whole number of milliseconds from 10 to 999999')
    .default('1000'),
  /** Worker log level; lines are JSON on stderr. */
  LOG_LEVEL: z.enum(LOG_LEVELS).default('INFO'),
  /** `1` turns on OpenTelemetry tracing (OTLP/HTTP to localhost:4318 unless an endpoint is set). */
  AGENTS_OTEL: z.enum(['0', '1']).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: optional.refine(
    (v) => v === undefined || /^https?:\/\//.test(v),
    'must be an http(s) URL',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optional.refine(
    (v) => v === undefined || /^https?:\/\//.test(v),
    'must be an http(s) URL',
  ),
  /** JSON price table merged over the built-in one: {"model": {"input": USD per Mtok, "output": ..., "cacheRead": ..., "cacheWrite": ..., "cacheWrite1h": ...}}. */
  MODEL_PRICES: optional.superRefine((v, ctx) => {
    const r = parsePriceTable(v);
    if ('problem' in r) ctx.addIssue({ code: 'custom', message: r.problem });
  }),
});

export type Config = z.infer<typeof ConfigSchema> & { dataDir: string };
type ConfigKey = keyof z.infer<typeof ConfigSchema>;

/** Secrets that may come from a file named by `NAME_FILE` (a compose or Kubernetes secret) instead of `NAME`. */
// VAULT_PUBLIC_KEY is not secret, but a deployment hands it over the same way, as a file.
export const SECRET_VARIABLES = [
  'ANTHROPIC_API_KEY',
  'VAULT_KEY',
  'CODEC_KEY',
  'CODEC_SERVER_TOKEN',
  'TEMPORAL_API_KEY',
  'DATABASE_URL',
  'VAULT_PUBLIC_KEY',
  'AGENTS_API_KEY',
] as const;

/** What runs in a process, as deployed: each worker role, the codec endpoint, the API, or the operator's `agents` command. */
export const SERVICE_ROLES = ['brain', 'hands', 'tools', 'all', 'codec-server', 'api', 'cli'] as const;
export type ServiceRole = (typeof SERVICE_ROLES)[number];

const TEMPORAL: ConfigKey[] = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_API_KEY',
];
const COMMON: ConfigKey[] = [
  ...TEMPORAL,
  'CODEC_KEY',
  'DATA_DIR',
  'KEY_FILES',
  'LOG_LEVEL',
  'AGENTS_OTEL',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
];
const STREAM: ConfigKey[] = ['STREAM_LISTEN', 'STREAM_URL'];
const BRAIN: ConfigKey[] = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_BASE_URL',
  'AGENT_MODEL',
  'DATABASE_URL',
  'BRAIN_WORKFLOW_CACHE',
  'BRAIN_WORKFLOW_HEAP_MB',
  'BRAIN_WORKFLOW_STACK_TRACES',
  'BRAIN_REPLAY_WATCHDOG',
  'BRAIN_PEER_WATCH',
  ...STREAM,
];
// DATABASE_URL: the vault's named secrets, the API's credentials and sessions' repository tokens, in PostgreSQL.
const HANDS: ConfigKey[] = [
  'VAULT_KEY',
  'DATABASE_URL',
  'DOCKER_HOST',
  'SANDBOX_IMAGE',
  'SANDBOX_RUNTIME',
  'HANDS_HOST_ID',
  'EGRESS_ALLOW',
  'EGRESS_DNS',
  'SANDBOX_QUOTA',
  'SNAPSHOT_MAX_BYTES',
  'SNAPSHOT_RETAIN',
  'SNAPSHOT_WORKSPACE_MAX_BYTES',
  ...STREAM,
];

const SESSION_CREATE: ConfigKey[] = ['API_SESSION_QUOTA', 'MODEL_PRICES', 'SELF_HOSTED_TOOL_TIMEOUT_SECONDS'];
const WEBHOOKS: ConfigKey[] = ['WEBHOOK_RETRY_DELAYS', 'WEBHOOK_DISABLE_AFTER', 'WEBHOOK_RELAY_INTERVAL_MS'];

/** The variables each role reads; anything else set for it is a mistake (a typo, or a secret it must not hold). */
export const ROLE_VARIABLES: Record<ServiceRole, readonly ConfigKey[]> = {
  brain: [...COMMON, ...BRAIN],
  hands: [...COMMON, ...HANDS],
  // A deployment's firings create sessions on a tools worker, under the API's quota, prices and timeouts.
  tools: [
    ...COMMON,
    'VAULT_KEY',
    'DATABASE_URL',
    'MCP_STDIO_JAIL',
    'EGRESS_ALLOW',
    'EGRESS_DNS',
    ...SESSION_CREATE,
    ...WEBHOOKS,
  ],
  all: [...COMMON, ...BRAIN, ...HANDS, 'MCP_STDIO_JAIL', ...SESSION_CREATE, ...WEBHOOKS],
  'codec-server': ['TEMPORAL_NAMESPACE', 'CODEC_KEY', 'CODEC_SERVER_TOKEN', 'DATA_DIR', 'KEY_FILES'],
  // Never VAULT_KEY: the API seals credentials to the public half and cannot open them.
  api: [
    ...COMMON,
    'DATABASE_URL',
    'API_LISTEN',
    'VAULT_PUBLIC_KEY',
    'EGRESS_ALLOW',
    'EGRESS_DNS',
    'API_RATE_LIMIT',
    'API_SESSION_QUOTA',
    'API_EVENTS_PER_SEND',
    'FILES_MAX_BYTES',
    'STORAGE_QUOTA_BYTES',
    'SELF_HOSTED_TOOL_TIMEOUT_SECONDS',
    'WORK_LEASE_TTL_SECONDS',
    'WORK_LEASE_MIN_TTL_SECONDS',
    'WORK_LEASE_MAX_TTL_SECONDS',
    'DEPLOYMENT_CATCHUP_WINDOW_SECONDS',
    'DEPLOYMENT_OVERLAP_POLICY',
  ],
  cli: Object.keys(ConfigSchema.shape) as ConfigKey[],
};

/** The variables a role may be given, with `NAME_FILE` beside each secret it reads. */
export function roleVariables(role: ServiceRole): string[] {
  const names = ROLE_VARIABLES[role];
  return [...names, ...SECRET_VARIABLES.filter((s) => names.includes(s)).map((s) => `${s}_FILE`)];
}

type Problem = { variable: string; message: string };

const has = (env: NodeJS.ProcessEnv, name: string) => !!env[name]?.trim() || !!env[`${name}_FILE`]?.trim();

/** What a role needs that has no working default. */
function roleProblems(role: ServiceRole, env: NodeJS.ProcessEnv): Problem[] {
  const problems: Problem[] = [];
  const keysFromEnv = env.KEY_FILES?.trim() === 'off';
  const needs = (name: string, why: string) => {
    if (!has(env, name)) problems.push({ variable: name, message: `is required ${why} (set ${name} or ${name}_FILE)` });
  };
  if (keysFromEnv && role !== 'cli') needs('CODEC_KEY', 'with KEY_FILES=off');
  if (keysFromEnv && (role === 'hands' || role === 'tools' || role === 'all'))
    needs('VAULT_KEY', `by the ${role} role with KEY_FILES=off`);
  if (keysFromEnv && role === 'api') needs('VAULT_PUBLIC_KEY', 'by the api role with KEY_FILES=off');
  if ((role === 'brain' || role === 'all') && !has(env, 'ANTHROPIC_API_KEY') && !env.ANTHROPIC_BASE_URL?.trim()) {
    problems.push({
      variable: 'ANTHROPIC_API_KEY',
      message: `is missing: the ${role} role calls the model; set ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL to a Messages API server such as \`agents model-server\``,
    });
  }
  if (!!env.TEMPORAL_TLS_CLIENT_CERT_PATH?.trim() !== !!env.TEMPORAL_TLS_CLIENT_KEY_PATH?.trim()) {
    const missing = env.TEMPORAL_TLS_CLIENT_CERT_PATH?.trim()
      ? 'TEMPORAL_TLS_CLIENT_KEY_PATH'
      : 'TEMPORAL_TLS_CLIENT_CERT_PATH';
    problems.push({ variable: missing, message: 'is required too: a client certificate and its key go together' });
  }
  return problems;
}

/** Reads each `NAME_FILE` into `NAME`; a file that can't be read, or both forms set, is a problem. */
function resolveSecretFiles(env: NodeJS.ProcessEnv): { env: NodeJS.ProcessEnv; problems: Problem[] } {
  const resolved = { ...env };
  const problems: Problem[] = [];
  for (const name of SECRET_VARIABLES) {
    const file = env[`${name}_FILE`]?.trim();
    if (!file) continue;
    if (env[name]?.trim()) {
      problems.push({ variable: `${name}_FILE`, message: `and ${name} are both set; set one` });
      continue;
    }
    try {
      resolved[name] = fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      problems.push({
        variable: `${name}_FILE`,
        message: `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): ${file}`,
      });
    }
    delete resolved[`${name}_FILE`];
  }
  return { env: resolved, problems };
}

export class ConfigError extends PlatformError {
  constructor(readonly problems: Problem[]) {
    super(`invalid configuration: ${problems.map((p) => `${p.variable} ${p.message}`).join('; ')}`);
  }
}

/**
 * The configuration from `env`. With a `role`, also what that role needs (keys, a model endpoint). One error
 * lists every bad variable. Secrets may come from `NAME_FILE`.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, role?: ServiceRole): Config {
  const files = resolveSecretFiles(env);
  const problems = [...files.problems, ...(role ? roleProblems(role, env) : [])];
  const result = ConfigSchema.safeParse(files.env);
  if (!result.success)
    problems.push(...result.error.issues.map((i) => ({ variable: i.path.join('.'), message: i.message })));
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...result.data!, dataDir: path.resolve(result.data!.DATA_DIR) };
}

/**
 * Checks the environment a deployment gives a role, without reading files (they live in the container):
 * every variable is one the role reads, and what it needs is there.
 */
export function checkRoleEnv(role: ServiceRole, env: Record<string, string>): Problem[] {
  const allowed = new Set(roleVariables(role));
  const problems: Problem[] = Object.keys(env)
    .filter((k) => !allowed.has(k))
    .map((k) => ({ variable: k, message: `is not read by the ${role} role` }));
  problems.push(...roleProblems(role, env));
  const shapeOnly = Object.fromEntries(
    Object.entries(env).filter(([k]) => allowed.has(k) && !k.endsWith('_FILE') && !k.endsWith('_PATH')),
  );
  const result = ConfigSchema.partial().safeParse(shapeOnly);
  if (!result.success)
    problems.push(...result.error.issues.map((i) => ({ variable: i.path.join('.'), message: i.message })));
  return problems;
}
