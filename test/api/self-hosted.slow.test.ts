// A self-hosted environment served to the SDK's own runner, unchanged: `EnvironmentWorker` from
// node_modules/@anthropic-ai/sdk, in a process of its own, polls `agents api` with an environment key and runs the
// SDK's toolset in its workdir. A session on that environment runs bash, read, write, edit, glob and grep there, uses
// a custom skill and a memory store, and finishes its turn. A worker SIGKILLed mid-call is replaced: a second worker
// reclaims the item once the lease lapses and the session finishes with every call answered exactly once, while the
// first worker's late heartbeat gets 412. A revoked key cannot poll; a sessions token reaches no other session; a
// call no worker answers becomes an error result when the session's timer runs out.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { startSdkWorker } from '../helpers/sdk-worker';
import { eventsUntil as sessionEventsUntil, idles, sayTo, type ApiEvent } from '../helpers/sdk-session';
import { createEnvironmentKey, revokeEnvironmentKey } from '../../src/api/environment-keys';

const TOOL_TIMEOUT_SECONDS = 20;

let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;
let envKey: { key: string; id: string };
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'self-hosted-'));
const workers: ChildProcess[] = [];
const storeSlug = `notes-${process.pid}`;

beforeAll(async () => {
  h = await startHarness({ hostId: `self-hosted-${process.pid}` });
  api = await startApiOn(h, ['default'], {
    WORK_LEASE_TTL_SECONDS: '4',
    WORK_LEASE_MIN_TTL_SECONDS: '1',
    WORK_LEASE_MAX_TTL_SECONDS: '60',
    SELF_HOSTED_TOOL_TIMEOUT_SECONDS: String(TOOL_TIMEOUT_SECONDS),
  });
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'on-prem', config: { type: 'self_hosted' } })).id;
  envKey = await createEnvironmentKey(api.db!, envId);
});
afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await api?.stop();
  await h?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.rmSync(path.join('/mnt/memory', storeSlug), { recursive: true, force: true });
});

/** The SDK's runner in a child process, serving the suite's environment; resolves once it polls. */
async function startWorker(name: string, workdir: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = await startSdkWorker({
    apiUrl: api.url,
    environmentId: envId,
    environmentKey: envKey.key,
    workdir,
    workerId: name,
    env,
  });
  workers.push(child);
  return child;
}

const eventsUntil = (id: string, done: (events: ApiEvent[]) => boolean) => sessionEventsUntil(client, id, done);
const say = (id: string, text: string) => sayTo(client, id, text);
const call = (name: string, input: Record<string, unknown>) => ({
  reply: { content: [{ type: 'tool_use' as const, name, input }] },
});
const done = { reply: { content: [{ type: 'text' as const, text: 'done' }] } };

type ToolResult = { type: 'user.tool_result'; tool_use_id: string; is_error?: boolean; content?: { text?: string }[] };
const resultsOf = (events: ApiEvent[]) =>
  events.filter((e) => (e.type as string) === 'user.tool_result') as unknown as ToolResult[];
const textOf = (r: ToolResult) => (r.content ?? []).map((b) => b.text ?? '').join('');
const usesOf = (events: ApiEvent[]) =>
  events.filter((e) => e.type === 'agent.tool_use') as Extract<ApiEvent, { type: 'agent.tool_use' }>[];

const SKILL_MD = ['---', 'name: greeter', 'description: Greets people by name.', '---', '', 'Say hello.', ''].join(
  '\n',
);

it('runs the toolset, a custom skill and a memory store on the SDK worker, and finishes the turn', async () => {
  const workdir = path.join(scratch, 'w1');
  const worker = await startWorker('worker-1', workdir, { MAX_IDLE_MS: '2000', MEMORY_SYNC_MS: '5000' });
  const skill = await client.beta.skills.create({
    display_name: 'Greeter',
    files: [await toFile(Buffer.from(SKILL_MD), 'greeter/SKILL.md')],
  });
  const store = await client.beta.memoryStores.create({ name: storeSlug });
  await client.beta.memoryStores.memories.create(store.id, { path: '/seed.md', content: 'the sky is green' });
  const agent = await client.beta.agents.create({
    name: 'on-prem',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
    skills: [{ type: 'custom', skill_id: skill.id }],
  });
  const session = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: envId,
    resources: [{ type: 'memory_store', memory_store_id: store.id }],
  });
  const mount = (session.resources.find((r) => r.type === 'memory_store') as { mount_path: string }).mount_path;
  h.mock.script(session.id, {
    steps: [
      call('bash', { command: 'echo hello > greet.txt && pwd' }),
      call('write', { file_path: 'notes/a.txt', content: 'alpha\nbeta\n' }),
      call('edit', { file_path: 'notes/a.txt', old_string: 'beta', new_string: 'gamma' }),
      call('read', { file_path: 'notes/a.txt' }),
      call('glob', { pattern: '**/*.txt' }),
      call('grep', { pattern: 'gamma' }),
      call('bash', { command: 'cat skills/*/SKILL.md skills/*/*/SKILL.md 2>/dev/null | head -3' }),
      call('bash', { command: `cat ${mount}/seed.md && echo 'water is wet' > ${mount}/learned.md` }),
      done,
    ],
  });
  await say(session.id, 'work here');
  const events = await eventsUntil(session.id, idles(1));

  // Every call was the toolset's, answered by the worker in its workdir; the turn ended.
  const uses = usesOf(events);
  expect(uses.map((u) => u.name)).toEqual(['bash', 'write', 'edit', 'read', 'glob', 'grep', 'bash', 'bash']);
  expect(uses.every((u) => u.evaluated_permission === 'allow')).toBe(true);
  const results = resultsOf(events);
  expect(results.map((r) => r.tool_use_id)).toEqual(uses.map((u) => u.id));
  expect(results.filter((r) => r.is_error)).toEqual([]);
  const [pwd, , , read, globbed, grepped, skillMd, memory] = results.map(textOf);
  expect(pwd.trim()).toBe(fs.realpathSync(workdir));
  expect(fs.readFileSync(path.join(workdir, 'greet.txt'), 'utf8')).toBe('hello\n');
  expect(read).toContain('gamma');
  expect(read).not.toContain('beta');
  expect(globbed).toContain('notes/a.txt');
  expect(globbed).toContain('greet.txt');
  expect(grepped).toContain('gamma');
  expect(skillMd).toContain('name: greeter');
  expect(memory).toContain('the sky is green');
  expect(events.some((e) => e.type === 'agent.tool_result')).toBe(false);

  // The model was offered the SDK toolset's own schemas, and told where the skill and the store are.
  const request = h.mock.requests(session.id)[0].body as { tools: { name: string }[]; system?: unknown };
  // web_fetch stays ours: a tools worker fetches through the egress gate.
  expect(request.tools.map((t) => t.name).sort()).toEqual([
    'bash',
    'edit',
    'glob',
    'grep',
    'read',
    'web_fetch',
    'write',
  ]);
  const offeredGlob = request.tools.find((t) => t.name === 'glob') as { input_schema?: unknown };
  expect(offeredGlob.input_schema).toMatchObject({ required: ['pattern'] });
  expect(JSON.stringify(request.system)).toContain('Greets people by name.');

  // The worker lets go once the session idles: its last sync saved the memory, and the item stopped.
  const learned = async () => {
    for await (const m of client.beta.memoryStores.memories.list(store.id))
      if ((m as { path?: string }).path === '/learned.md') return true;
    return false;
  };
  for (let i = 0; i < 300 && !(await learned()); i++) await new Promise((r) => setTimeout(r, 100));
  expect(await learned()).toBe(true);
  let items: Anthropic.Beta.Environments.Work.BetaSelfHostedWork[] = [];
  for (let i = 0; i < 300; i++) {
    items = [];
    for await (const w of client.beta.environments.work.list(envId)) items.push(w);
    if (items.every((w) => w.state === 'stopped')) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(items.filter((w) => w.data.type === 'session' && w.data.id === session.id)).toEqual([
    expect.objectContaining({ state: 'stopped', secret: null }),
  ]);
  worker.kill('SIGTERM');
});

it('survives a worker SIGKILLed mid-call: another reclaims the item, every call is answered once, the late heartbeat gets 412', async () => {
  const shared = path.join(scratch, 'shared');
  const beats = path.join(scratch, 'beats-1.jsonl');
  const first = await startWorker('worker-a', shared, { HEARTBEAT_LOG: beats });
  const agent = await client.beta.agents.create({
    name: 'slow',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const session = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  h.mock.script(session.id, {
    steps: [
      call('bash', { command: 'if [ -f once ]; then echo resumed; else touch once; sleep 120; fi' }),
      call('bash', { command: 'echo after' }),
      done,
    ],
  });
  await say(session.id, 'slow work');
  // The first worker has started the call (its marker is there) and holds the lease (it has heartbeaten).
  for (let i = 0; i < 300 && !(fs.existsSync(path.join(shared, 'once')) && fs.existsSync(beats)); i++)
    await new Promise((r) => setTimeout(r, 100));
  expect(fs.existsSync(path.join(shared, 'once'))).toBe(true);
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));

  await startWorker('worker-b', shared);
  const events = await eventsUntil(session.id, idles(1));
  const uses = usesOf(events);
  const results = resultsOf(events);
  expect(uses).toHaveLength(2);
  expect(results.map((r) => r.tool_use_id)).toEqual(uses.map((u) => u.id));
  expect(results.map(textOf).map((t) => t.trim())).toEqual(['resumed', 'after']);

  // The first worker's lease is gone: its heartbeat, sent late with its own credential, is refused with 412.
  const last = fs
    .readFileSync(beats, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, string>)
    .at(-1)!;
  const late = new Anthropic({
    authToken: last.authorization.replace(/^Bearer /, ''),
    apiKey: null,
    baseURL: api.url,
    maxRetries: 0,
  });
  const workId = /\/work\/([^/?]+)\/heartbeat/.exec(last.url)![1];
  const refused = await late.beta.environments.work
    .heartbeat(workId, { environment_id: envId, expected_last_heartbeat: last.last_heartbeat })
    .catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(Anthropic.Beta.Environments.Work.BetaHeartbeatPreconditionFailedError);
  expect((refused as { details: { error_code: string } }).details.error_code).toBe('heartbeat_precondition_failed');

  // Its sessions token ended with its lease: it reads nothing any more, its own session included.
  await expect(late.beta.sessions.retrieve(session.id)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);
});

it('refuses a revoked key and a sessions token on another session, and times a call no worker answers out', async () => {
  for (const w of workers) w.kill('SIGKILL');
  // A poll with a revoked environment key is a 401.
  const spare = await createEnvironmentKey(api.db!, envId);
  await revokeEnvironmentKey(api.db!, spare.id);
  const revoked = new Anthropic({ authToken: spare.key, apiKey: null, baseURL: api.url, maxRetries: 0 });
  await expect(revoked.beta.environments.work.poll(envId)).rejects.toBeInstanceOf(Anthropic.AuthenticationError);

  // A live sessions token, taken from a poll, reaches its own session and no other (404).
  const agent = await client.beta.agents.create({
    name: 'idle',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const mine = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  const theirs = await client.beta.sessions.create({ agent: agent.id, environment_id: envId });
  const poller = new Anthropic({ authToken: envKey.key, apiKey: null, baseURL: api.url, maxRetries: 0 });
  let claimed: Anthropic.Beta.Environments.Work.BetaSelfHostedWork | null = null;
  for (let i = 0; i < 50 && !(claimed && claimed.data.id === mine.id); i++) {
    claimed = await poller.beta.environments.work.poll(envId, { block_ms: 500 });
    if (claimed && claimed.data.id !== mine.id)
      await poller.beta.environments.work.stop(claimed.id, { environment_id: envId, force: true });
  }
  expect(claimed?.data.id).toBe(mine.id);
  const secret = JSON.parse(Buffer.from(claimed!.secret!, 'base64url').toString()) as { sessions_token: string };
  const scoped = new Anthropic({ authToken: secret.sessions_token, apiKey: null, baseURL: api.url, maxRetries: 0 });
  expect((await scoped.beta.sessions.retrieve(mine.id)).id).toBe(mine.id);
  await expect(scoped.beta.sessions.retrieve(theirs.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  await expect(scoped.beta.agents.list()).rejects.toBeInstanceOf(Anthropic.PermissionDeniedError);

  // Nobody answers this call: when the session's timer runs out, it writes the call's error result and goes on.
  h.mock.script(mine.id, { steps: [call('bash', { command: 'echo never' }), done] });
  await say(mine.id, 'nobody home');
  const events = await eventsUntil(mine.id, idles(1));
  const [result] = resultsOf(events);
  expect(result.is_error).toBe(true);
  expect(textOf(result)).toMatch(
    new RegExp(`no worker of the self-hosted environment answered within ${TOOL_TIMEOUT_SECONDS} s`),
  );
  // A late answer is refused: the call has its result.
  const lateAnswer = await client.beta.sessions.events
    .send(mine.id, {
      events: [
        { type: 'user.tool_result', tool_use_id: result.tool_use_id, content: [{ type: 'text', text: 'late' }] },
      ],
    })
    .catch((e: unknown) => e);
  expect(lateAnswer).toBeInstanceOf(Anthropic.BadRequestError);
  await client.beta.sessions.archive(theirs.id);
});
