// `agents doctor`: checks each part a deployment needs and says what to do about anything wrong. The compose
// healthchecks run the same checks for a worker's own role.
import { COMPOSE_HOST_ID, composeHostId } from './hands/host-id';
import os from 'node:os';
import Anthropic from '@anthropic-ai/sdk';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ConfigError, loadConfig, type Config } from './config';
import { HANDS_TASK_QUEUE, hostTaskQueue } from './hands/hands-activities';
import { pingDocker, resolveDockerHost, sandboxImage } from './host/docker-host';
import { keySource } from './key-files';
import { dockerFromHost } from './sandbox/docker';
import { DEFAULT_MODEL } from './session/agent';
import { BRAIN_TASK_QUEUE, TOOLS_TASK_QUEUE, type WorkerRole } from './session/queues';
import { clientConnectionOptions } from './temporal-connection';
import { checkDynamicConfig, checkRetention, checkSearchAttributes } from './observability/cluster-checks';

export const CHECKS = [
  'config',
  'temporal',
  'search-attributes',
  'retention',
  'dynamic-config',
  'pollers',
  'docker',
  'sandbox-image',
  'keys',
  'model',
] as const;
/** What the namespace on the cluster must offer; read from the cluster, the same for every role. */
const CLUSTER_CHECKS = ['search-attributes', 'retention', 'dynamic-config'] as const;
export type CheckName = (typeof CHECKS)[number];

export interface CheckResult {
  name: CheckName;
  ok: boolean;
  /** What was found. */
  detail: string;
  /** What to do about it, when not ok. */
  fix?: string;
}

export interface DoctorReport {
  ok: boolean;
  role?: WorkerRole;
  checks: CheckResult[];
}

export interface DoctorOptions {
  /** A worker checking itself: only its role's parts, and pollers from this host. Without it, the whole deployment. */
  role?: WorkerRole;
  /** Only these checks (config always runs first, since the others need it). */
  only?: CheckName[];
  env?: NodeJS.ProcessEnv;
}

const ROLE_CHECKS: Record<WorkerRole | 'deployment', readonly CheckName[]> = {
  deployment: CHECKS,
  brain: ['config', 'temporal', 'pollers', 'keys', 'model'],
  hands: ['config', 'temporal', 'pollers', 'docker', 'sandbox-image', 'keys'],
  tools: ['config', 'temporal', 'pollers', 'keys'],
  all: CHECKS,
};

const TIMEOUT_MS = 5_000;
/** A poller counts as live if it polled this recently (a long poll lasts about a minute). */
const POLLER_FRESH_MS = 2.5 * 60_000;

type QueueType = 'workflow' | 'activity';
interface Queue {
  name: string;
  type: QueueType;
  role: Exclude<WorkerRole, 'all'>;
}

function queuesOf(role: WorkerRole | undefined, handsHostId: string): Queue[] {
  const queues: Queue[] = [];
  if (!role || role === 'brain' || role === 'all') {
    queues.push(
      { name: BRAIN_TASK_QUEUE, type: 'workflow', role: 'brain' },
      { name: BRAIN_TASK_QUEUE, type: 'activity', role: 'brain' },
    );
  }
  if (!role || role === 'hands' || role === 'all') {
    queues.push({ name: HANDS_TASK_QUEUE, type: 'activity', role: 'hands' });
    // A hands worker also serves its host's own queue, where its sandboxes' calls go.
    if (role) queues.push({ name: hostTaskQueue(handsHostId), type: 'activity', role: 'hands' });
  }
  if (!role || role === 'tools' || role === 'all')
    queues.push({ name: TOOLS_TASK_QUEUE, type: 'activity', role: 'tools' });
  return queues;
}

const firstLine = (e: unknown) => String((e as Error)?.message ?? e).split('\n')[0];

async function checkTemporal(config: Config): Promise<{ result: CheckResult; connection?: Connection }> {
  const where = `${config.TEMPORAL_ADDRESS} namespace ${config.TEMPORAL_NAMESPACE}`;
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...clientConnectionOptions(config), connectTimeout: TIMEOUT_MS });
  } catch (e) {
    return {
      result: {
        name: 'temporal',
        ok: false,
        detail: `cannot reach Temporal at ${config.TEMPORAL_ADDRESS}: ${firstLine(e)}`,
        fix: 'start Temporal (`agents dev` locally, `docker compose up -d temporal` with compose) or set TEMPORAL_ADDRESS; a cluster or Temporal Cloud also needs its TLS or API key variables (README, "Temporal clusters and Temporal Cloud")',
      },
    };
  }
  try {
    await connection.withDeadline(Date.now() + TIMEOUT_MS, () =>
      connection.workflowService.describeNamespace({ namespace: config.TEMPORAL_NAMESPACE }),
    );
    return { result: { name: 'temporal', ok: true, detail: `reachable at ${where}` }, connection };
  } catch (e) {
    await connection.close();
    const message = firstLine(e);
    const fix = /not found/i.test(message)
      ? `create the namespace (\`temporal operator namespace create -n ${config.TEMPORAL_NAMESPACE}\`) or set TEMPORAL_NAMESPACE`
      : /unauth|permission|denied/i.test(message)
        ? 'check TEMPORAL_API_KEY or the TLS client certificate: the server refused them'
        : 'check that TEMPORAL_ADDRESS is a Temporal frontend and that its TLS settings match the server';
    return { result: { name: 'temporal', ok: false, detail: `Temporal at ${where} answered: ${message}`, fix } };
  }
}

async function checkPollers(
  connection: Connection,
  config: Config,
  role: WorkerRole | undefined,
): Promise<CheckResult> {
  let handsHostId = config.HANDS_HOST_ID ?? os.hostname();
  if (handsHostId === COMPOSE_HOST_ID && (role === 'hands' || role === 'all'))
    handsHostId = await composeHostId(await resolveDockerHost());
  // A worker's identity is `pid@hostname`, maybe followed by ` stream=URL`; a worker checking itself looks for its own host's pollers.
  const self = role ? `@${os.hostname()}` : undefined;
  const found: string[] = [];
  const missing: Queue[] = [];
  for (const q of queuesOf(role, handsHostId)) {
    const response = await connection.withDeadline(Date.now() + TIMEOUT_MS, () =>
      connection.workflowService.describeTaskQueue({
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: { name: q.name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType:
          q.type === 'workflow'
            ? temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW
            : temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      }),
    );
    const live = (response.pollers ?? []).filter((p) => {
      const seen = p.lastAccessTime?.seconds ? Number(p.lastAccessTime.seconds) * 1000 : 0;
      return Date.now() - seen < POLLER_FRESH_MS && (!self || (p.identity ?? '').split(' ')[0].endsWith(self));
    });
    if (live.length > 0) found.push(`${q.name} (${q.type}): ${live.length}`);
    else missing.push(q);
  }
  if (missing.length === 0) return { name: 'pollers', ok: true, detail: `pollers on ${found.join(', ')}` };
  const roles = [...new Set(missing.map((q) => q.role))];
  return {
    name: 'pollers',
    ok: false,
    detail: `no ${self ? `poller from this host (${os.hostname()})` : 'poller'} on ${missing.map((q) => `${q.name} (${q.type})`).join(', ')}`,
    fix: self
      ? `this ${role} worker is not polling: see its log; restart it if it stays so`
      : `start ${roles.join(', ')} worker(s): \`agents worker --role ${roles.length === 1 ? roles[0] : 'all'}\`, or \`docker compose up -d ${roles.join(' ')}\``,
  };
}

async function checkDocker(): Promise<{ result: CheckResult; host?: string }> {
  const host = await resolveDockerHost();
  const fix =
    'start a Docker engine (`npm run setup` starts one) or set DOCKER_HOST; with compose, only the hands service mounts /var/run/docker.sock';
  if (!host)
    return {
      result: {
        name: 'docker',
        ok: false,
        detail: 'no Docker engine answers at DOCKER_HOST, /var/run/docker.sock or /run/managed-agents/docker.sock',
        fix,
      },
    };
  if (!(await pingDocker(host, TIMEOUT_MS)))
    return { result: { name: 'docker', ok: false, detail: `no Docker engine answers at ${host}`, fix } };
  return { result: { name: 'docker', ok: true, detail: `engine answers at ${host}` }, host };
}

async function checkSandboxImage(host: string | undefined): Promise<CheckResult> {
  const image = sandboxImage();
  if (!host)
    return {
      name: 'sandbox-image',
      ok: false,
      detail: `cannot look for ${image}: no Docker engine`,
      fix: 'fix the docker check first',
    };
  try {
    const info = await dockerFromHost(host).getImage(image).inspect();
    return { name: 'sandbox-image', ok: true, detail: `${image} present (${info.Id.slice(7, 19)})` };
  } catch (e) {
    return {
      name: 'sandbox-image',
      ok: false,
      detail: `${image} is not on the engine at ${host}: ${firstLine(e)}`,
      fix: `build it with \`npm run setup\` on that engine's host (offline with mmdebstrap), or set SANDBOX_IMAGE to an image it has`,
    };
  }
}

function checkKeys(config: Config, role: WorkerRole | undefined): CheckResult {
  const needsVault = role === 'hands' || role === 'tools' || role === 'all';
  const found: string[] = [];
  const problems: string[] = [];
  const fixes: string[] = [];
  for (const name of ['CODEC_KEY', 'VAULT_KEY'] as const) {
    const s = keySource(name, config);
    if (s.source === 'missing') {
      if (name === 'VAULT_KEY' && !needsVault) {
        found.push(`VAULT_KEY not here${role ? '' : ' (only hands and tools workers need it)'}`);
        continue;
      }
      problems.push(`${name} missing`);
      fixes.push(
        config.KEY_FILES === 'off'
          ? `set ${name} or ${name}_FILE (KEY_FILES=off allows no key file)`
          : `set ${name} or ${name}_FILE to the key every ${name === 'CODEC_KEY' ? 'worker and client' : 'hands and tools worker'} shares, or run \`agents dev\` once to generate a local one into ${config.dataDir}/keys`,
      );
    } else if (s.problem) {
      problems.push(`${name} from ${s.source === 'env' ? 'the environment' : s.file} ${s.problem}`);
      fixes.push(
        `fix ${name}: ${name === 'CODEC_KEY' ? 'base64 of 32 bytes, or id:base64,... for rotation' : 'base64 of 32 bytes'}`,
      );
    } else found.push(`${name} from ${s.source === 'env' ? 'the environment' : s.file}`);
  }
  if (problems.length === 0) return { name: 'keys', ok: true, detail: found.join('; ') };
  return { name: 'keys', ok: false, detail: problems.join('; '), fix: fixes.join('; ') };
}

async function checkModel(config: Config): Promise<CheckResult> {
  if (!config.ANTHROPIC_API_KEY && !config.ANTHROPIC_BASE_URL) {
    return {
      name: 'model',
      ok: false,
      detail: 'no model endpoint configured',
      fix: 'set ANTHROPIC_API_KEY, or ANTHROPIC_BASE_URL to a Messages API server such as `agents model-server`',
    };
  }
  const model = config.AGENT_MODEL ?? DEFAULT_MODEL;
  const client = new Anthropic({
    apiKey: config.ANTHROPIC_API_KEY ?? 'offline',
    baseURL: config.ANTHROPIC_BASE_URL,
    maxRetries: 0,
    timeout: TIMEOUT_MS,
  });
  const where = config.ANTHROPIC_BASE_URL ?? 'https://api.anthropic.com';
  try {
    await client.messages.countTokens({ model, messages: [{ role: 'user', content: 'ping' }] });
    return { name: 'model', ok: true, detail: `${where} answers for ${model}` };
  } catch (e) {
    if (e instanceof Anthropic.AuthenticationError || e instanceof Anthropic.PermissionDeniedError) {
      return {
        name: 'model',
        ok: false,
        detail: `${where} refused the key (${e.status})`,
        fix: 'set ANTHROPIC_API_KEY to a valid key',
      };
    }
    if (e instanceof Anthropic.NotFoundError) {
      return {
        name: 'model',
        ok: false,
        detail: `${where} does not know model ${model} or the Messages API (404)`,
        fix: 'set AGENT_MODEL to a model the endpoint serves, or ANTHROPIC_BASE_URL to a Messages API server',
      };
    }
    if (e instanceof Anthropic.APIError && e.status !== undefined) {
      return {
        name: 'model',
        ok: false,
        detail: `${where} answered ${e.status}: ${firstLine(e)}`,
        fix: "check the endpoint's status; a 5xx or 529 usually passes",
      };
    }
    return {
      name: 'model',
      ok: false,
      detail: `cannot reach ${where}: ${firstLine(e)}`,
      fix: "check ANTHROPIC_BASE_URL and this host's network access to it",
    };
  }
}

/** Runs the checks for a role (or the whole deployment) and reports each one. */
export async function runDoctor(opts: DoctorOptions = {}): Promise<DoctorReport> {
  const wanted = new Set<CheckName>(
    (opts.only ?? ROLE_CHECKS[opts.role ?? 'deployment']).filter((c) => c !== 'config'),
  );
  const checks: CheckResult[] = [];
  let config: Config;
  try {
    config = loadConfig(opts.env ?? process.env, opts.role);
    checks.push({
      name: 'config',
      ok: true,
      detail: `environment valid${opts.role ? ` for the ${opts.role} role` : ''}`,
    });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    checks.push({ name: 'config', ok: false, detail: e.message, fix: 'fix each variable named above' });
    return { ok: false, role: opts.role, checks };
  }
  let connection: Connection | undefined;
  try {
    if (wanted.has('temporal') || wanted.has('pollers') || CLUSTER_CHECKS.some((c) => wanted.has(c))) {
      const t = await checkTemporal(config);
      connection = t.connection;
      if (wanted.has('temporal')) checks.push(t.result);
      for (const name of CLUSTER_CHECKS.filter((c) => wanted.has(c))) {
        if (!connection) {
          checks.push({
            name,
            ok: false,
            detail: `cannot read the namespace: Temporal unreachable`,
            fix: 'fix the temporal check first',
          });
          continue;
        }
        const run = {
          'search-attributes': checkSearchAttributes,
          retention: checkRetention,
          'dynamic-config': checkDynamicConfig,
        }[name];
        checks.push(
          await run(connection, config.TEMPORAL_NAMESPACE).catch((e) => ({
            name,
            ok: false,
            detail: `could not read it from ${config.TEMPORAL_ADDRESS}: ${firstLine(e)}`,
            fix: "check the temporal check and the server's logs",
          })),
        );
      }
      if (wanted.has('pollers')) {
        checks.push(
          connection
            ? await checkPollers(connection, config, opts.role).catch((e) => ({
                name: 'pollers' as const,
                ok: false,
                detail: `DescribeTaskQueue failed: ${firstLine(e)}`,
                fix: "check the temporal check and the server's logs",
              }))
            : {
                name: 'pollers',
                ok: false,
                detail: 'cannot look for pollers: Temporal unreachable',
                fix: 'fix the temporal check first',
              },
        );
      }
    }
    if (wanted.has('docker') || wanted.has('sandbox-image')) {
      const d = await checkDocker();
      if (wanted.has('docker')) checks.push(d.result);
      if (wanted.has('sandbox-image')) checks.push(await checkSandboxImage(d.host));
    }
    if (wanted.has('keys')) checks.push(checkKeys(config, opts.role));
    if (wanted.has('model')) checks.push(await checkModel(config));
  } finally {
    await connection?.close();
  }
  return { ok: checks.every((c) => c.ok), role: opts.role, checks };
}

/** One line per check, with what to do under each failure. */
export function formatDoctor(report: DoctorReport): string {
  const lines = report.checks.map(
    (c) =>
      `${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(17)} ${c.detail}${c.fix && !c.ok ? `\n     ${''.padEnd(17)} fix: ${c.fix}` : ''}`,
  );
  if (report.ok) lines.push('all checks passed');
  return lines.join('\n');
}
