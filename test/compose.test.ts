// docker-compose.yml, checked by parsing it (there is no registry here to pull its images): services,
// networks, healthchecks, the Docker socket, secrets, and each service's env against its role's config schema.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { ConfigSchema, checkRoleEnv, type ServiceRole } from '../src/config';
import { CHECKS } from '../src/doctor';
import { writeApiSecrets, writeComposeSecrets } from '../src/infra/compose-secrets';
import { vaultPublicKey } from '../src/vault/sealed';
import { WORKER_ROLES } from '../src/session/queues';

const ROOT = path.resolve(__dirname, '..');

interface Service {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  env_file?: string[];
  secrets?: string[];
  volumes?: string[];
  networks?: string[];
  ports?: string[];
  healthcheck?: { test?: string[] };
  depends_on?: Record<string, { condition?: string }>;
  user?: string;
  container_name?: string;
  hostname?: string;
}
interface Compose {
  services: Record<string, Service>;
  networks: Record<string, { internal?: boolean } | null>;
  volumes: Record<string, unknown>;
  secrets: Record<string, { file: string }>;
}

function loadCompose(): Compose {
  return YAML.parse(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as Compose;
}

/** The configuration variables the worker image's Dockerfile sets (ENV lines), which every service of that image inherits. */
function imageConfigEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of fs.readFileSync(path.join(ROOT, 'deploy/worker.Dockerfile'), 'utf8').matchAll(/^ENV (.+)$/gm)) {
    for (const pair of m[1].trim().split(/\s+/)) {
      const [k, v] = pair.split('=');
      if (k in ConfigSchema.shape) env[k] = v;
    }
  }
  return env;
}

/** Compose's `${VAR:-default}` with nothing set in the operator's shell. */
const interpolate = (v: string) =>
  String(v).replace(/\$\{(\w+)(?::?-([^}]*))?\}/g, (_, _name: string, def?: string) => def ?? '');

const WORKER_IMAGE = /managed-agents\/worker/;
/** Which file secrets, and env files holding secrets, each service may have. */
const ALLOWED_SECRETS: Record<string, string[]> = {
  codec_key: ['brain', 'hands', 'tools', 'codec-server', 'api'],
  // Everything hosts share lives in PostgreSQL: the API's resources, the archive (brain) and the vault (hands, tools).
  database_url: ['api', 'brain', 'hands', 'tools'],
  vault_public_key: ['api'],
  vault_key: ['hands', 'tools'],
  anthropic_api_key: ['brain'],
};
const ALLOWED_ENV_FILES: Record<string, string[]> = { 'deploy/secrets/postgres.env': ['postgres', 'temporal'] };
const SECRET_NAME = /KEY|TOKEN|PASSWORD|PWD|SECRET/;

function roleOf(s: Service): ServiceRole | undefined {
  const cmd = (s.command ?? []).map(String);
  if (cmd[0] === 'worker') return (cmd[cmd.indexOf('--role') + 1] ?? 'all') as ServiceRole;
  if (cmd[0] === 'codec-server') return 'codec-server';
  if (cmd[0] === 'api') return 'api';
  return undefined;
}

/** Every problem with a parsed compose file, one line each. */
function problemsOf(c: Compose): string[] {
  const problems: string[] = [];
  const expected = ['postgres', 'temporal', 'temporal-ui', 'codec-server', 'api', 'brain', 'hands', 'tools'];
  for (const name of expected) if (!c.services[name]) problems.push(`no ${name} service`);
  for (const name of Object.keys(c.services)) if (!expected.includes(name)) problems.push(`unexpected service ${name}`);

  const imageEnv = imageConfigEnv();
  for (const [name, s] of Object.entries(c.services)) {
    // Healthchecks, and startup ordered by them.
    if (!s.healthcheck?.test?.length) problems.push(`${name}: no healthcheck`);
    for (const [dep, cond] of Object.entries(s.depends_on ?? {})) {
      if (!c.services[dep]) problems.push(`${name}: depends on unknown ${dep}`);
      if (cond?.condition !== 'service_healthy')
        problems.push(`${name}: depends on ${dep} without condition service_healthy`);
    }
    // Networks are declared, and each service is on at least one.
    if (!s.networks?.length) problems.push(`${name}: on no network`);
    for (const n of s.networks ?? []) if (!(n in c.networks)) problems.push(`${name}: undeclared network ${n}`);
    // Ports only on the host's loopback.
    for (const p of s.ports ?? [])
      if (!String(p).startsWith('127.0.0.1:')) problems.push(`${name}: port ${p} published beyond loopback`);
    // The Docker socket only on hands.
    // A volume as it reads with no variable set (`${DOCKER_SOCKET:-/var/run/docker.sock}` is the default socket).
    for (const v of (s.volumes ?? []).map((x) => interpolate(String(x)))) {
      if (/docker\.sock/.test(v.split(':')[0]) && name !== 'hands') problems.push(`${name}: mounts the Docker socket`);
      if (v.startsWith('/') && !/docker\.sock/.test(v)) problems.push(`${name}: mounts host path ${v}`);
    }
    // Secrets only where allowed; no secret as a literal env value.
    for (const sec of s.secrets ?? [])
      if (!ALLOWED_SECRETS[sec]?.includes(name)) problems.push(`${name}: holds secret ${sec}`);
    for (const f of s.env_file ?? [])
      if (!ALLOWED_ENV_FILES[f]?.includes(name)) problems.push(`${name}: reads env file ${f}`);
    const env = Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, interpolate(v)]));
    for (const [k, v] of Object.entries(env)) {
      if (k.endsWith('_FILE')) {
        const sec = /^\/run\/secrets\/(.+)$/.exec(v)?.[1];
        if (!sec || !(s.secrets ?? []).includes(sec))
          problems.push(`${name}: ${k} points at ${v}, not one of its secrets`);
      } else if (SECRET_NAME.test(k) && v !== '') problems.push(`${name}: secret ${k} set in plain env`);
    }
    // Our services: the env they set matches their role's config schema (nothing unknown, nothing missing).
    const role = roleOf(s);
    if (s.image && WORKER_IMAGE.test(s.image)) {
      if (!role) problems.push(`${name}: runs the worker image with no known command`);
      else
        for (const p of checkRoleEnv(role, { ...imageEnv, ...env }))
          problems.push(`${name} (${role}): ${p.variable} ${p.message}`);
    }
    if (role && (WORKER_ROLES as readonly string[]).includes(role)) {
      // Its healthcheck is `agents doctor` for its own role, with known checks.
      const test = (s.healthcheck?.test ?? []).map(String);
      const doctor = test.indexOf('doctor');
      if (doctor < 0 || test[test.indexOf('--role') + 1] !== role)
        problems.push(`${name}: healthcheck is not \`doctor --role ${role}\``);
      const checks = test[test.indexOf('--check') + 1]?.split(',') ?? [];
      for (const ch of checks)
        if (!(CHECKS as readonly string[]).includes(ch))
          problems.push(`${name}: healthcheck names unknown check ${ch}`);
      if (!checks.includes('pollers')) problems.push(`${name}: healthcheck does not check its pollers`);
    }
  }

  const brain = c.services.brain;
  if (brain) {
    // Scalable with --scale: nothing that pins one container.
    if (brain.container_name || brain.hostname || brain.ports?.length)
      problems.push('brain: pinned by container_name, hostname or ports, so it cannot scale');
  }
  const hands = c.services.hands;
  if (hands && !(hands.volumes ?? []).some((v) => interpolate(String(v)).startsWith('/var/run/docker.sock:')))
    problems.push('hands: no Docker socket');
  if (hands && !hands.environment?.HANDS_HOST_ID)
    problems.push('hands: no fixed HANDS_HOST_ID, so a restart would orphan its sandboxes');

  const temporal = c.services.temporal;
  if (temporal) {
    if (!/^temporalio\/auto-setup:/.test(temporal.image ?? '')) problems.push('temporal: not the auto-setup image');
    if (temporal.environment?.DB !== 'postgres12' || temporal.environment?.POSTGRES_SEEDS !== 'postgres')
      problems.push('temporal: not on the postgres service');
    if (!temporal.depends_on?.postgres) problems.push('temporal: does not wait for postgres');
  }
  const ui = c.services['temporal-ui'];
  const codec = c.services['codec-server'];
  if (ui && codec) {
    const endpoint = new URL(interpolate(ui.environment?.TEMPORAL_CODEC_ENDPOINT ?? 'http://none'));
    const published = (codec.ports ?? []).map((p) => interpolate(String(p)).split(':')[1]);
    if (!published.includes(endpoint.port))
      problems.push(`temporal-ui: codec endpoint ${endpoint} is not the codec server's published port`);
    const uiOrigin = `http://localhost:${interpolate(String(ui.ports?.[0] ?? '')).split(':')[1]}`;
    const cmd = (codec.command ?? []).map((x) => interpolate(String(x)));
    if (cmd[cmd.indexOf('--origin') + 1] !== uiOrigin)
      problems.push(`codec-server: does not allow the UI's origin ${uiOrigin}`);
  }

  // Network isolation: the database only with Temporal and the API, internal networks with no way out, the codec server alone.
  const on = (net: string) =>
    Object.entries(c.services)
      .filter(([, s]) => s.networks?.includes(net))
      .map(([n]) => n)
      .sort();
  if (JSON.stringify(on('db')) !== JSON.stringify(['api', 'brain', 'hands', 'postgres', 'temporal', 'tools']))
    problems.push(`db network holds ${on('db').join(', ')}`);
  // A cluster: state hosts share is in PostgreSQL, never on a volume one host's containers would keep to themselves.
  for (const name of ['api', 'brain', 'hands', 'tools']) {
    if (c.services[name] && !c.services[name].environment?.DATABASE_URL_FILE)
      problems.push(`${name}: no DATABASE_URL_FILE, so its shared state stays on its own disk`);
    for (const v of c.services[name]?.volumes ?? [])
      if (/^(archive|vaults):/.test(String(v)))
        problems.push(`${name}: keeps shared state on volume ${String(v).split(':')[0]}`);
  }
  const api = c.services.api;
  if (api && (api.secrets ?? []).includes('vault_key'))
    problems.push('api: holds the vault key, which would let it open credentials');
  for (const net of ['db', 'backend']) if (!c.networks[net]?.internal) problems.push(`${net} network is not internal`);
  if (JSON.stringify(on('codec')) !== JSON.stringify(['codec-server']))
    problems.push(`codec network holds ${on('codec').join(', ')}`);
  for (const w of ['brain', 'hands', 'tools'])
    if (!c.services[w]?.networks?.includes('backend')) problems.push(`${w}: cannot reach Temporal`);

  for (const [n, sec] of Object.entries(c.secrets ?? {}))
    if (!sec.file?.startsWith('deploy/secrets/')) problems.push(`secret ${n} outside deploy/secrets/`);
  return problems;
}

it('declares Temporal on PostgreSQL, the Web UI with the codec endpoint, the API, and brain, hands and tools workers that match their config schemas', () => {
  expect(problemsOf(loadCompose())).toEqual([]);
});

it('catches a secret, the Docker socket or a variable where it does not belong', () => {
  const c = loadCompose();
  c.services.brain.secrets!.push('vault_key');
  c.services.brain.environment!.VAULT_KEY_FILE = '/run/secrets/vault_key';
  c.services.tools.volumes = ['/var/run/docker.sock:/var/run/docker.sock', 'vaults:/var/lib/managed-agents/vaults'];
  delete c.services.brain.environment!.DATABASE_URL_FILE;
  c.services.tools.environment!.TEMPORAL_ADRESS = 'temporal:7233';
  c.services['temporal-ui'].environment!.CODEC_KEY = 'c2VjcmV0';
  delete c.services.hands.environment!.VAULT_KEY_FILE;
  delete c.services.temporal.healthcheck;
  c.services.hands.depends_on = { temporal: {} };
  expect(problemsOf(c)).toEqual([
    'temporal: no healthcheck',
    'temporal-ui: secret CODEC_KEY set in plain env',
    'brain: holds secret vault_key',
    'brain (brain): VAULT_KEY_FILE is not read by the brain role',
    'hands: depends on temporal without condition service_healthy',
    'hands (hands): VAULT_KEY is required by the hands role with KEY_FILES=off (set VAULT_KEY or VAULT_KEY_FILE)',
    'tools: mounts the Docker socket',
    'tools (tools): TEMPORAL_ADRESS is not read by the tools role',
    'brain: no DATABASE_URL_FILE, so its shared state stays on its own disk',
    'tools: keeps shared state on volume vaults',
  ]);
});

it('writes the secret files compose mounts once, and keeps them after', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-secrets-'));
  try {
    const first = writeComposeSecrets(dir, { ANTHROPIC_API_KEY: 'sk-test' });
    expect(first.written.sort()).toEqual(['anthropic_api_key', 'codec_key', 'postgres.env', 'vault_key']);
    const codecKey = fs.readFileSync(path.join(dir, 'codec_key'), 'utf8');
    expect(Buffer.from(codecKey.trim(), 'base64')).toHaveLength(32);
    expect(fs.statSync(path.join(dir, 'codec_key')).mode & 0o777).toBe(0o400);
    expect(fs.readFileSync(path.join(dir, 'postgres.env'), 'utf8')).toMatch(
      /^POSTGRES_PASSWORD=(\w{48})\nPOSTGRES_PWD=\1\n$/,
    );
    expect(writeComposeSecrets(dir, {}).written).toEqual([]);
    expect(fs.readFileSync(path.join(dir, 'codec_key'), 'utf8')).toBe(codecKey);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('writes the api service its database URL and the vault public key, derived from vault_key', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-secrets-'));
  try {
    writeComposeSecrets(dir, {});
    expect((await writeApiSecrets(dir)).sort()).toEqual(['database_url', 'vault_public_key']);
    const pw = /POSTGRES_PASSWORD=(\w+)/.exec(fs.readFileSync(path.join(dir, 'postgres.env'), 'utf8'))![1];
    expect(fs.readFileSync(path.join(dir, 'database_url'), 'utf8')).toBe(
      `postgres://temporal:${pw}@postgres:5432/agents_api\n`,
    );
    expect(fs.readFileSync(path.join(dir, 'vault_public_key'), 'utf8').trim()).toBe(
      await vaultPublicKey(fs.readFileSync(path.join(dir, 'vault_key'), 'utf8').trim()),
    );
    expect(await writeApiSecrets(dir)).toEqual([]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
