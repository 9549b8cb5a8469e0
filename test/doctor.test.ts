// `agents doctor` against a real dev server, the real Docker engine and the local Messages API server.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnWorker } from './helpers/child-worker';
import { runAgents, type Run } from './helpers/cli';
import { startHarness, uniqueId, type Harness } from './helpers/env';
import { resolveDockerHost } from '../src/host/docker-host';
import type { DoctorReport } from '../src/doctor';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../src/infra/temporal-cli';
import { SESSION_SEARCH_ATTRIBUTES } from '../src/session/search-attributes';

let h: Harness;
let dataDir: string;
let env: Record<string, string>;

beforeAll(async () => {
  // The dev server as `agents dev` runs it.
  h = await startHarness({ worker: false, serverArgs: DEV_SERVER_DYNAMIC_CONFIG });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-doctor-'));
  env = {
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    DATA_DIR: dataDir,
    DOCKER_HOST: (await resolveDockerHost())!,
    HANDS_HOST_ID: uniqueId('doctor'),
  };
});
afterAll(async () => {
  await h?.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function report(r: Run): DoctorReport {
  return JSON.parse(r.stdout) as DoctorReport;
}
const check = (rep: DoctorReport, name: string) => rep.checks.find((c) => c.name === name)!;

it('finds no pollers and no search attributes before any worker runs, says what to do, and exits non-zero', async () => {
  const r = await runAgents(h.env.address, ['doctor', '--json'], env);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/^error: doctor: search-attributes, pollers failed\n$/);
  const rep = report(r);
  expect(rep.ok).toBe(false);
  for (const name of ['config', 'temporal', 'retention', 'dynamic-config', 'docker', 'sandbox-image', 'keys', 'model'])
    expect(check(rep, name)).toMatchObject({ ok: true });
  // A brain worker registers them at start; until then doctor names each one and the operator's command.
  const sa = check(rep, 'search-attributes');
  for (const k of SESSION_SEARCH_ATTRIBUTES) expect(sa.detail).toContain(k.name);
  expect(sa.fix).toContain(
    '`temporal operator search-attribute create --namespace default --name AgentSessionState --type Keyword`, `temporal operator search-attribute create --namespace default --name AgentName --type Keyword`',
  );
  const pollers = check(rep, 'pollers');
  expect(pollers.ok).toBe(false);
  expect(pollers.detail).toMatch(/agents \(workflow\), agents \(activity\), hands \(activity\), tools \(activity\)/);
  expect(pollers.fix).toMatch(/agents worker --role all|docker compose up -d brain hands tools/);
});

it('passes with every role polling, and a worker checks its own pollers as the compose healthcheck does', async () => {
  const worker = await spawnWorker({ ...env, TEMPORAL_ADDRESS: h.env.address }, 'all');
  try {
    const r = await runAgents(h.env.address, ['doctor'], env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^ok {3}pollers {11}pollers on agents \(workflow\): \d, agents \(activity\): \d, hands \(activity\): \d, tools \(activity\): \d$/m,
    );
    expect(r.stdout).toMatch(/all checks passed\n$/);
    // The hands healthcheck: its own queues (hands and hands.<host>) polled from this host.
    const self = await runAgents(
      h.env.address,
      ['doctor', '--role', 'hands', '--check', 'temporal,pollers,docker', '--json'],
      env,
    );
    expect(self.code).toBe(0);
    expect(check(report(self), 'pollers').detail).toContain(`hands.${env.HANDS_HOST_ID} (activity): 1`);
    expect(report(self).checks.map((c) => c.name)).toEqual(['config', 'temporal', 'pollers', 'docker']);
  } finally {
    await worker.kill('SIGTERM');
  }
});

it('names a model endpoint that does not answer and an unreachable Temporal, with what to do', async () => {
  const r = await runAgents('127.0.0.1:1', ['doctor', '--json', '--check', 'temporal,model'], {
    ...env,
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:1',
  });
  expect(r.code).toBe(1);
  const rep = report(r);
  expect(check(rep, 'temporal')).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/cannot reach Temporal at 127\.0\.0\.1:1/),
    fix: expect.stringMatching(/TEMPORAL_ADDRESS/),
  });
  expect(check(rep, 'model')).toMatchObject({
    ok: false,
    detail: expect.stringMatching(/cannot reach http:\/\/127\.0\.0\.1:1/),
    fix: expect.stringMatching(/ANTHROPIC_BASE_URL/),
  });
});

it('reports an endpoint that is not the Messages API and a missing codec key under KEY_FILES=off', async () => {
  // The local server answers 404 for a path that is not the Messages API.
  const r = await runAgents(h.env.address, ['doctor', '--json', '--check', 'keys,model'], {
    ...env,
    ANTHROPIC_BASE_URL: `${h.mock.url}/not-messages`,
    CODEC_KEY: '',
    KEY_FILES: 'off',
  });
  expect(r.code).toBe(1);
  const rep = report(r);
  expect(check(rep, 'keys')).toMatchObject({
    ok: false,
    detail: 'CODEC_KEY missing',
    fix: expect.stringMatching(/CODEC_KEY_FILE/),
  });
  expect(check(rep, 'model')).toMatchObject({
    ok: false,
    fix: expect.stringMatching(/AGENT_MODEL|ANTHROPIC_BASE_URL/),
  });
});

it('stops at a bad environment, listing each bad variable', async () => {
  const r = await runAgents('nonsense', ['doctor', '--json', '--role', 'hands'], {
    ...env,
    VAULT_KEY: 'short',
    HANDS_HOST_ID: 'a b',
  });
  expect(r.code).toBe(1);
  const rep = report(r);
  expect(rep.checks).toHaveLength(1);
  expect(rep.checks[0].detail).toMatch(/TEMPORAL_ADDRESS must be HOST:PORT/);
  expect(rep.checks[0].detail).toMatch(/VAULT_KEY must be base64 of 32 bytes/);
  expect(rep.checks[0].detail).toMatch(/HANDS_HOST_ID must be 1-100 letters/);
});
