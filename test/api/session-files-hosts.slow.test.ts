// Files and memory across hands hosts: a session's first host, an `agents worker --role hands` process reading the
// API's PostgreSQL, mounts an uploaded file and a memory store, and its tools write an output and a memory. Then the
// host is killed (SIGKILL, its containers and volumes removed): the output is still downloadable, the memory intact,
// and the next turn, on a second host, finds the upload and the memory mounted again.
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import type Docker from 'dockerode';
import { startApiOn, type TestApi } from '../helpers/api';
import {
  bashStep,
  doneStep,
  eventsUntil as sessionEventsUntil,
  sayTo,
  toolResultTexts,
  type ApiEvent,
  idles,
} from '../helpers/sdk-session';
import type { ChildWorker } from '../helpers/child-worker';
import { removeHostSandboxes, startHarness, type Harness } from '../helpers/env';
import { docker } from '../helpers/hands';
import { spawnHandsHost } from '../helpers/hands-hosts';

const HOST = `files-hosts-${process.pid}`;
let h: Harness;
let api: TestApi;
let client: Anthropic;
let d: Docker;
const children: ChildWorker[] = [];

beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'brain' });
  api = await startApiOn(h);
  client = await api.client();
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await api?.stop();
  await h?.stop();
  for (const host of [`${HOST}-a`, `${HOST}-b`]) await removeHostSandboxes(host).catch(() => undefined);
});

const handsHost = (hostId: string) =>
  spawnHandsHost({ address: h.env.address, databaseUrl: api.databaseUrl!, hostId }, children);

const eventsUntil = (id: string, done: (events: ApiEvent[]) => boolean) => sessionEventsUntil(client, id, done, 1200);
const bash = bashStep;
const done = doneStep;
const results = toolResultTexts;
const say = (id: string, text: string) => sayTo(client, id, text);

it('keeps the outputs and the memory of a session whose hands host was killed, and mounts them again on the next', async () => {
  const first = await handsHost(`${HOST}-a`);
  const csv = Buffer.from('region,amount\nnorth,12\nsouth,30\n');
  const file = await client.beta.files.upload({ file: await toFile(csv, 'sales.csv', { type: 'text/csv' }) });
  const store = await client.beta.memoryStores.create({ name: 'ledger' });
  const agent = await client.beta.agents.create({
    name: 'analyst',
    model: 'claude-test',
    tools: [{ type: 'agent_toolset_20260401' }],
  });
  const env = await client.beta.environments.create({ name: 'hosts-env' });
  const s = await client.beta.sessions.create({
    agent: agent.id,
    environment_id: env.id,
    resources: [
      { type: 'file', file_id: file.id },
      { type: 'memory_store', memory_store_id: store.id },
    ],
  });
  const upload = `/mnt/session/uploads/${file.id}`;
  h.mock.script(s.id, {
    steps: [
      bash(
        `awk -F, 'NR>1{s+=$2} END{printf "total %d\\n", s}' ${upload} > /mnt/session/outputs/report.txt && cp /mnt/session/outputs/report.txt /mnt/memory/ledger/total.md && cat /mnt/memory/ledger/total.md`,
      ),
      done,
      // The first call of the next turn may go to the dead host and come back lost; the one after gets a new sandbox.
      bash(`cat /mnt/memory/ledger/total.md && wc -c < ${upload}`),
      bash(`cat /mnt/memory/ledger/total.md && wc -c < ${upload}`),
      done,
    ],
  });
  await say(s.id, 'sum it');
  expect(results(await eventsUntil(s.id, idles(1)))).toEqual(['total 42\n[exit 0]']);

  // The first host dies with everything it had.
  await first.kill('SIGKILL');
  await removeHostSandboxes(`${HOST}-a`);
  const left = await d.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`managed-agents.host=${HOST}-a`] }),
  });
  expect(left).toEqual([]);

  const outputs = [];
  for await (const f of client.beta.files.list({ scope_id: s.id })) outputs.push(f);
  expect(outputs.map((f) => f.filename)).toEqual(['report.txt']);
  const report = Buffer.from(await (await client.beta.files.download(outputs[0].id)).arrayBuffer());
  expect(report.toString()).toBe('total 42\n');
  const memories = [];
  for await (const m of client.beta.memoryStores.memories.list(store.id)) memories.push(m);
  expect(memories.map((m) => (m as { path: string }).path)).toEqual(['/total.md']);
  const memory = await client.beta.memoryStores.memories.retrieve((memories[0] as { id: string }).id, {
    memory_store_id: store.id,
  });
  expect(memory.content).toBe('total 42\n');

  // The next turn runs on a second host, with the upload and the memory mounted again.
  await handsHost(`${HOST}-b`);
  await say(s.id, 'what was it?');
  const second = results(await eventsUntil(s.id, idles(2))).slice(1);
  expect(second[1]).toBe(`total 42\n${csv.length}\n[exit 0]`);
  if (second[0] !== second[1]) expect(second[0]).toMatch(/sandbox main was lost/);
});
