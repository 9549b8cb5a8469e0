// Files and memory in a session, through the API and the SDK on one stack (brain, hands with the API's database,
// a real Docker sandbox per session):
// - `upload_to_read`: from the start of an upload to the result of the first tool call that reads the file (upload,
//   session create with the file as a resource, a message, the sandbox provisioned with its mounts, the read),
//   against the same steps with no file (session create, message, sandbox, a read of a file the image has).
// - `collect_turn`: one turn (message to idle) whose tool writes an output and a memory, in a session with the
//   outputs directory and a read-write memory store mounted, against the same turn writing to /tmp in a session
//   with no mounts: what collecting outputs and syncing memory after each tool call costs a turn.
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { randomBytes } from 'node:crypto';
import { startTestApi, testSessionDeps, type TestApi } from '../test/helpers/api';
import { armStats, interleave, ratio, type BenchResult, type Ctx } from './lib';

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;

const bash = (command: string) => ({
  reply: { content: [{ type: 'tool_use' as const, name: 'bash', input: { command } }] },
});
const done = { reply: { content: [{ type: 'text' as const, text: 'done' }] } };

async function waitFor(client: Anthropic, id: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  for (let i = 0; i < 6000; i++) {
    const events: Event[] = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`session ${id} did not get there`);
}
const toolResults = (events: Event[]) => events.filter((e) => e.type === 'agent.tool_result');
const idles = (events: Event[]) =>
  events.filter(
    (e) => e.type === 'session.status_idle' && (e as { stop_reason: { type: string } }).stop_reason.type === 'end_turn',
  ).length;
const say = (client: Anthropic, id: string, text: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });

export async function runSessionFiles(ctx: Ctx): Promise<BenchResult[]> {
  const { stack, quick } = ctx;
  let api: TestApi | undefined;
  const worker = await stack.worker({ role: 'all', apiDb: () => api?.db });
  api = await startTestApi('postgres', ['default'], testSessionDeps(stack.client));
  const results: BenchResult[] = [];
  try {
    const client = await api.client();
    const agent = await client.beta.agents.create({
      name: 'bench-files',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const env = await client.beta.environments.create({ name: 'bench-files' });
    const content = randomBytes(1024 * 1024);

    // upload_to_read
    const first = await interleave(
      ['upload_attach_read', 'no_file'] as const,
      quick ? 4 : 10,
      1,
      async (arm) => {
        const t0 = performance.now();
        let resources: Anthropic.Beta.Sessions.SessionCreateParams['resources'] = [];
        let path = '/etc/hostname';
        if (arm === 'upload_attach_read') {
          const file = await client.beta.files.upload({ file: await toFile(content, 'data.bin') });
          resources = [{ type: 'file', file_id: file.id }];
          path = `/mnt/session/uploads/${file.id}`;
        }
        const s = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id, resources });
        stack.mock.script(s.id, { steps: [bash(`wc -c < ${path}`), done], firstByteDelayMs: 0 });
        await say(client, s.id, 'read it');
        const events = await waitFor(client, s.id, (e) => toolResults(e).length >= 1);
        const elapsed = performance.now() - t0;
        const text = JSON.stringify(toolResults(events)[0]);
        if (arm === 'upload_attach_read' && !text.includes(String(content.length)))
          throw new Error(`the read did not see the upload: ${text}`);
        await waitFor(client, s.id, (e) => idles(e) >= 1);
        await client.beta.sessions.archive(s.id).catch(() => undefined);
        return elapsed;
      },
      (m) => ctx.log(`  upload_to_read ${m}`),
    );
    const upload = { upload_attach_read: armStats(first.upload_attach_read), no_file: armStats(first.no_file) };
    const uploadRatio = ratio(upload.upload_attach_read, upload.no_file);
    results.push({
      name: 'upload_to_read',
      arms: upload,
      ratios: { upload_over_no_file: uploadRatio },
      ratioTo: { no_file: 'upload_attach_read' },
      notes: `${quick ? 4 : 10} samples per arm, interleaved, each a new session and sandbox; the model answers at once. upload_attach_read: files.upload of 1 MiB, sessions.create with it as a file resource, events.send, then the first tool result (\`wc -c\` of /mnt/session/uploads/<id>). no_file: the same without the upload and resource, reading /etc/hostname. Ratio p50 ${uploadRatio.p50}.`,
    });

    // collect_turn: two long-lived sessions, one turn each per sample.
    const store = await client.beta.memoryStores.create({ name: 'bench-notes' });
    const mounted = await client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
      resources: [{ type: 'memory_store', memory_store_id: store.id }],
    });
    const plain = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    const turns: Record<string, number> = { [mounted.id]: 0, [plain.id]: 0 };
    const rounds = quick ? 10 : 30;
    const stepsFor = (dir: string, memory?: string) =>
      Array.from({ length: rounds + 3 }, (_, i) => [
        bash(
          `head -c 4096 /dev/urandom > ${dir}/out-${i % 5}.bin${memory ? ` && echo "turn ${i}" > ${memory}/note-${i % 5}.md` : ` && echo "turn ${i}" > /tmp/note-${i % 5}.md`}`,
        ),
        done,
      ]).flat();
    stack.mock.script(mounted.id, {
      steps: stepsFor('/mnt/session/outputs', '/mnt/memory/bench-notes'),
      firstByteDelayMs: 0,
    });
    stack.mock.script(plain.id, { steps: stepsFor('/tmp'), firstByteDelayMs: 0 });
    const turn = async (id: string) => {
      const t0 = performance.now();
      const n = ++turns[id];
      await say(client, id, `turn ${n}`);
      await waitFor(client, id, (e) => idles(e) >= n);
      return performance.now() - t0;
    };
    const second = await interleave(
      ['outputs_and_memory', 'no_mounts'] as const,
      rounds,
      2,
      (arm) => turn(arm === 'outputs_and_memory' ? mounted.id : plain.id),
      (m) => ctx.log(`  collect_turn ${m}`),
    );
    const collect = {
      outputs_and_memory: armStats(second.outputs_and_memory),
      no_mounts: armStats(second.no_mounts),
    };
    const collectRatio = ratio(collect.outputs_and_memory, collect.no_mounts);
    const outputs = [];
    for await (const f of client.beta.files.list({ scope_id: mounted.id })) outputs.push(f);
    const versions = [];
    for await (const v of client.beta.memoryStores.memoryVersions.list(store.id)) versions.push(v);
    results.push({
      name: 'collect_turn',
      arms: collect,
      ratios: { mounts_over_none: collectRatio },
      ratioTo: { no_mounts: 'outputs_and_memory' },
      notes: `${rounds} turns per arm after 2 warm-ups, interleaved, each one bash call writing a 4 KiB file and a short note, then a text reply; the model answers at once, so the turn is platform time. outputs_and_memory writes into /mnt/session/outputs and a read-write memory store (collected into ${outputs.length} session files and ${versions.length} memory versions by the end); no_mounts writes the same into /tmp of a session without resources. Ratio p50 ${collectRatio.p50}.`,
    });
  } finally {
    await api?.stop().catch(() => undefined);
    await worker.shutdown().catch(() => undefined);
  }
  return results;
}
