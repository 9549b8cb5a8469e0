// Harness versions: default@1 ends a turn on an empty reply, default@2 nudges the model and asks again. The
// workaround is retired behind a patch without breaking running sessions; deleting it outright would break the
// replay of default@2 histories, and the recorded fixtures catch that. An unknown harness is refused at start.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import webpack from 'webpack';
import { Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { WorkflowFailedError } from '@temporalio/client';
import { createDataConverter, failureConverterPath } from '../src/codec';
import { EMPTY_REPLY_NUDGE } from '../src/session/harness';
import type { MockStep } from '../src/dev/model-script';
import { sendMessageUpdate } from '../src/session/contract';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { expectOneLineError, runAgents } from './helpers/cli';
import {
  allEvents,
  say,
  startHarness,
  startSession,
  startTestWorker,
  testAgent,
  uniqueId,
  waitForEvents,
  type Harness,
} from './helpers/env';
import { FIXTURE_CODEC_KEY } from './helpers/test-keys';
import { statusUntil } from './helpers/actions';
import type { RunningWorker } from '../src/worker';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const EMPTY: MockStep = { reply: { content: [] } };
const text = (t: string): MockStep => ({ reply: { content: [{ type: 'text', text: t }] } });
const agentOf = (harness: string) => ({ harness, tools: ['session_events' as const], sandboxes: {} });

/** The last user message of each request the model was sent. */
function lastUserTexts(sessionId: string): string[] {
  return h.mock.requests(sessionId).map((r) => {
    const messages = r.body.messages as { role: string; content: { type: string; text?: string }[] }[];
    return messages
      .at(-1)!
      .content.map((b) => b.text ?? b.type)
      .join(' ');
  });
}

/** Sends `text` and waits until `n` assistant messages are in the log. */
async function turn(handle: Awaited<ReturnType<typeof startSession>>, message: string, n: number) {
  await handle.executeUpdate(sendMessageUpdate, { args: [{ text: message }] });
  return waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length >= n);
}

describe('harness versions', () => {
  it('default@1 ends the turn on an empty reply; default@2 nudges the model, at most twice a turn', async () => {
    const v1 = await startSession(h, { agent: agentOf('default@1') });
    h.mock.script(v1.workflowId, { steps: [EMPTY, text('late answer')] });
    await turn(v1, 'answer me', 1);
    await say(v1, 'hello?');
    expect((await allEvents(v1)).map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'assistant_message',
      'user_message',
      'assistant_message',
    ]);
    expect(lastUserTexts(v1.workflowId)).toEqual(['answer me', 'hello?']);

    const v2 = await startSession(h, { agent: agentOf('default@2') });
    h.mock.script(v2.workflowId, { steps: [EMPTY, text('Here is my answer.'), EMPTY, EMPTY, EMPTY] });
    let events = await turn(v2, 'answer me', 2);
    expect(events.slice(1).map((e) => [e.type, e.type === 'user_message' ? (e.source ?? 'user') : ''])).toEqual([
      ['user_message', 'user'],
      ['assistant_message', ''],
      ['user_message', 'harness'],
      ['assistant_message', ''],
    ]);
    expect(events.at(-1)).toMatchObject({ content: [{ type: 'text', text: 'Here is my answer.' }] });
    // The model saw its empty reply and then the nudge, in a conversation the API accepts.
    const second = h.mock.requests(v2.workflowId)[1].body.messages as { role: string; content: unknown }[];
    expect(second.slice(-2)).toEqual([
      { role: 'assistant', content: [{ type: 'text', text: '(no content)' }] },
      { role: 'user', content: [expect.objectContaining({ type: 'text', text: EMPTY_REPLY_NUDGE })] },
    ]);
    // A model that stays empty is nudged twice, then the turn ends.
    await turn(v2, 'and again', 5);
    await statusUntil(v2, (st) => st.state === 'waiting_for_user');
    events = await allEvents(v2);
    expect(events.filter((e) => e.type === 'user_message' && e.source === 'harness')).toHaveLength(3);
    expect(h.mock.requests(v2.workflowId)).toHaveLength(5);
    expect(h.mock.requests(v2.workflowId).every((r) => r.status === 200)).toBe(true);
  });

  it('refuses an unknown harness at start, from the CLI and from any Temporal client', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-harness-'));
    try {
      const file = path.join(dir, 'agent.yaml');
      fs.writeFileSync(file, 'name: future\nharness: default@9\n');
      expectOneLineError(
        await runAgents(h.env.address, ['start', '--agent', file]),
        /harness: unknown harness default@9; this version knows default@1, default@2/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const raw = { ...testAgent(), harness: 'default@9' };
    const err = await h.env.client.workflow
      .execute(sessionWorkflow, {
        taskQueue: BRAIN_TASK_QUEUE,
        workflowId: uniqueId('bad-harness'),
        args: [{ agent: raw }],
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause?.message).toMatch(
      /invalid session input: agent.harness: unknown harness default@9/,
    );
  });
});

describe('retiring the default@2 workaround', () => {
  const quiet = { info() {}, warn() {}, error: console.error, debug() {}, trace() {}, log() {} } as never;
  /** The workflow bundle with one module of src/workflows replaced, as a later version of the code would have it. */
  const bundleWith = (request: string, replacement: string): Promise<WorkflowBundleWithSourceMap> =>
    bundleWorkflowCode({
      workflowsPath: require.resolve('../src/workflows'),
      failureConverterPath,
      logger: quiet,
      webpackConfigHook: (config) => ({
        ...config,
        plugins: [
          ...(config.plugins ?? []),
          new webpack.NormalModuleReplacementPlugin(
            new RegExp(`^${request.replace('.', '\\.')}$`),
            (r: { request: string; context: string }) => {
              if (path.resolve(r.context) === path.resolve(__dirname, '../src/workflows')) r.request = replacement;
            },
          ),
        ],
      }),
    });
  const fixtures = ['harness-v1-session.json', 'harness-v2-session.json'].map((f) => ({
    workflowId: f,
    history: historyFromJSON(JSON.parse(fs.readFileSync(path.join(__dirname, 'histories', f), 'utf8'))),
  }));
  const replay = async (workflowBundle: WorkflowBundleWithSourceMap) => {
    const out: Record<string, unknown> = {};
    for await (const r of Worker.runReplayHistories(
      { workflowBundle, dataConverter: createDataConverter(FIXTURE_CODEC_KEY) },
      fixtures,
    ))
      out[r.workflowId] = r.error;
    return out;
  };

  it('deleting the workaround outright breaks the replay of default@2 histories', async () => {
    const errors = await replay(
      await bundleWith('./harness-rules', require.resolve('./fixtures/harness-workaround-removed')),
    );
    expect(errors['harness-v1-session.json']).toBeUndefined();
    expect(errors['harness-v2-session.json']).toBeInstanceOf(DeterminismViolationError);
  });

  it('retired behind a patch: old histories replay, and a running default@2 session carries on without it', async () => {
    const retired = await bundleWith('./harness-retired', require.resolve('./fixtures/harness-retired-default2'));
    expect(await replay(retired)).toEqual({
      'harness-v1-session.json': undefined,
      'harness-v2-session.json': undefined,
    });

    // A default@2 session runs on today's workers and gets nudged...
    const handle = await startSession(h, { agent: agentOf('default@2') });
    h.mock.script(handle.workflowId, { steps: [EMPTY, text('first answer'), EMPTY, text('second answer')] });
    await turn(handle, 'one', 2);
    expect((await allEvents(handle)).filter((e) => e.type === 'user_message' && e.source === 'harness')).toHaveLength(
      1,
    );
    // ...then the deploy that retires the workaround replaces every worker.
    await h.worker.shutdown();
    let next: RunningWorker | undefined = await startTestWorker(h.env.address, h.mock.url, { workflowBundle: retired });
    try {
      // The new worker replays the nudged turn from history, then ends the next empty reply's turn as default@1 would.
      await turn(handle, 'two', 3);
      await say(handle, 'three');
      const events = await allEvents(handle);
      expect(events.filter((e) => e.type === 'user_message' && e.source === 'harness')).toHaveLength(1);
      expect(
        events
          .filter((e) => e.type === 'assistant_message')
          .map((e) => (e.type === 'assistant_message' ? e.content.map((b) => b.text).join('') : '')),
      ).toEqual(['', 'first answer', '', 'second answer']);
      const described = await handle.describe();
      expect(described.status.name).toBe('RUNNING');
    } finally {
      await next?.shutdown();
      next = undefined;
    }
  });
});
