// `npm run record-histories [NAME-PART ...]`: records the sessions whose histories test/replay.test.ts replays,
// each exercising features of the workflow, into test/histories/. A recording never overwrites a fixture: old
// histories must keep replaying, so delete or rename one on purpose to re-record it. With arguments, only the
// recordings whose title contains one of them run.
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import crypto from 'node:crypto';
import os from 'node:os';
import { FileVault } from '../src/vault';
import { loadConfig } from '../src/config';
import { startGitServer } from './helpers/git-server';
import { startTrackerServer } from './helpers/mcp-server';
import {
  archiveThreadUpdate,
  defineOutcomeUpdate,
  endSignal,
  getFileUpdate,
  interruptUpdate,
  interruptSignal,
  putFileUpdate,
  resolveToolUseUpdate,
  sendMessageUpdate,
  statusQuery,
  statusWebhooksSignal,
  submitToolResultUpdate,
  updateSessionUpdate,
  userMessageSignal,
} from '../src/session/contract';
import { messagesUntilHandover, readLogStep, requiresAction, toolStep } from './helpers/actions';
import { bash, callTool, docker, sessionContainers } from './helpers/hands';
import type { WorkflowHandle } from '@temporalio/client';
import {
  logOf,
  removeHostSandboxes,
  runsOf,
  say,
  startHarness,
  startSession,
  startTestWorker,
  testAgent,
  testArchive,
  turnDone,
  waitForEvents,
  type Harness,
} from './helpers/env';
import { sessionWorkflow } from '../src/workflows';
import { BRAIN_TASK_QUEUE } from '../src/session/queues';
import { forkSession, wakeSession } from '../src/session-ops';
import { graderScriptKey, judgeScriptKey } from '../src/dev/model-replies';
import { childSessionId } from '../src/workflows/subagents';
import { RUNNING_PUBLISH_DELAY_MS } from '../src/workflows/visibility';
import { spawn, turn } from './helpers/subagents';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApiOn } from './helpers/api';
import { vaultPublicKey } from '../src/vault/sealed';
import { addWebhookEndpoint } from '../src/webhooks/endpoints';
import { deliveryWorkflowId } from '../src/webhooks/outbox-relay';
import { listWebhookEvents } from '../src/storage/repos/webhooks-repo';

const DIR = path.join(__dirname, 'histories');
const FIXTURE_TOKEN = 'ghp_fixture_token_not_a_secret';
// Texts the fixtures hold, word for word, so that a recording made again gives the same history: a message
// after which the scripted reply reads the session log, and the line a child's reply runs its command with.
const RECORDED_READ_LOG = 'Please read the session log.';
const RECORDED_RUN = 'I will run that in my sandbox.';

/** Ends a recorded session and saves its history in the standard JSON form, unless that fixture exists. */
async function endAndSave(handle: WorkflowHandle, name: string) {
  await handle.signal(endSignal, { reason: 'recorded' });
  await handle.result();
  const file = path.join(DIR, name);
  if (fs.existsSync(file)) {
    process.stderr.write(`${name} exists; not overwritten\n`);
    return;
  }
  fs.writeFileSync(file, historyToJSON(await handle.fetchHistory()));
}

const recordings: { title: string; run: () => Promise<void> }[] = [];
function record(title: string, run: () => Promise<void>): void {
  recordings.push({ title, run });
}

record('records a session whose workflow upserts its search attributes and memo, with activity summaries', async () => {
  const h = await startHarness();
  try {
    const handle = await startSession(h, {
      id: 'recorded-observable',
      agent: { name: 'observable', tools: ['session_events'] },
    });
    h.mock.script(handle.workflowId, {
      steps: [{ reply: { content: [{ type: 'tool_use', name: 'session_events', input: { from: 0 } }] } }],
    });
    await say(handle, 'Read your own log.');
    await endAndSave(handle, 'observable-session.json');
  } finally {
    await h.stop();
  }
});

record('records a session that exercises every feature of the workflow', async () => {
  const h = await startHarness();
  try {
    const handle = await startSession(h, { id: 'recorded-skeleton', message: { text: 'Hello', messageId: 'first' } });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message'));
    h.mock.script(handle.workflowId, { steps: [readLogStep] });
    await say(handle, RECORDED_READ_LOG);
    await handle.signal(userMessageSignal, { text: 'Hello', messageId: 'first' });
    await handle.signal(userMessageSignal, { text: '' });
    h.mock.script(handle.workflowId, { steps: [{ status: 500 }, { status: 400 }] });
    await say(handle, 'this one fails');
    h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 20_000 }] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'slow' }] });
    while (h.mock.requests(handle.workflowId).length < 6) await new Promise((r) => setTimeout(r, 50));
    await handle.signal(interruptSignal, { reason: 'too slow' });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
    await say(handle, 'Thanks');
    await endAndSave(handle, 'skeleton-session.json');
  } finally {
    await h.stop();
  }
});

record('records a session that uses sandboxes: lazy provisioning, loss, idle stop and resume, files', async () => {
  const h = await startHarness({ role: 'all', hostId: 'recorder' });
  try {
    const d = await docker();
    const handle = await startSession(h, {
      id: 'recorded-hands',
      agent: { sandboxes: { main: { idleStopMinutes: 0.05 } } },
    });
    await bash(h, handle, 'echo one > one.txt');
    await callTool(h, handle, 'str_replace_based_edit_tool', { command: 'view', path: 'one.txt' });
    const [container] = await sessionContainers(d, handle.workflowId, false);
    await d.getContainer(container.Id).kill();
    await bash(h, handle, 'cat one.txt');
    await bash(h, handle, 'cat one.txt');
    while ((await handle.query(statusQuery)).sandboxes[0]?.state !== 'stopped')
      await new Promise((r) => setTimeout(r, 200));
    await handle.executeUpdate(putFileUpdate, {
      args: [{ path: 'two.txt', contentBase64: Buffer.from('two').toString('base64') }],
    });
    await handle.executeUpdate(getFileUpdate, { args: [{ path: 'two.txt' }] });
    await endAndSave(handle, 'hands-session.json');
  } finally {
    await h.stop();
  }
});

record(
  'records a session with credentials: private repo, git_push and git_pull, an MCP tool, encrypted history',
  async () => {
    const git = await startGitServer([FIXTURE_TOKEN]);
    const tracker = await startTrackerServer();
    const vaultDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-record-vault-'));
    const vault = new FileVault(vaultDir, crypto.randomBytes(32).toString('base64'));
    const issued = tracker.issue('recorder');
    await vault.put('recorder', 'git-token', FIXTURE_TOKEN);
    await vault.put('recorder', 'tracker-oauth', issued.accessToken);
    const h = await startHarness({ role: 'all', hostId: 'recorder', vault });
    try {
      const repoUrl = git.createRepo('fixture.git', { 'README.md': 'fixture\n' });
      const handle = await startSession(h, {
        id: 'recorded-credentials',
        agent: {
          vault: 'recorder',
          sandboxes: { main: { repo: { url: repoUrl, ref: 'main', credential: 'vault:git-token' } } },
          tools: ['bash', 'git_push', 'git_pull', 'session_events'],
          mcpServers: { tracker: { transport: 'http', url: tracker.url, credential: 'vault:tracker-oauth' } },
        },
      });
      await bash(h, handle, 'echo change >> README.md && git -c user.name=r -c user.email=r@x commit -qam change');
      await callTool(h, handle, 'git_push', {});
      await callTool(h, handle, 'git_pull', {});
      await callTool(h, handle, 'mcp__tracker__create_issue', { title: 'recorded' });
      await endAndSave(handle, 'credentials-session.json');
    } finally {
      await h.stop();
      await git.stop();
      await tracker.stop();
      fs.rmSync(vaultDir, { recursive: true, force: true });
    }
  },
);

record(
  'records a session whose idle timer outlives its turns: armed once, fired mid-turn, the sandbox stopped',
  async () => {
    const h = await startHarness({ role: 'all', hostId: 'recorder-idle' });
    try {
      const handle = await startSession(h, {
        id: 'recorded-idle-timer',
        agent: { sandboxes: { main: { idleStopMinutes: 0.05 } } },
      });
      await bash(h, handle, 'echo one > turns.txt');
      await bash(h, handle, 'echo two >> turns.txt');
      // A turn that outlasts the idle time: the timer fires during it, and the wait after it arms the next one.
      await bash(h, handle, 'sleep 4; echo three >> turns.txt');
      while ((await handle.query(statusQuery)).sandboxes[0]?.state !== 'stopped')
        await new Promise((r) => setTimeout(r, 200));
      await bash(h, handle, 'cat turns.txt');
      await endAndSave(handle, 'idle-timer-session.json');
    } finally {
      await h.stop();
    }
  },
);

record(
  'records a long session: compaction, and handovers (continue-as-new) at idle and in the middle of a tool loop',
  async () => {
    const h = await startHarness();
    try {
      const id = 'recorded-long-session';
      // A session id is used once: clear what an earlier recording sealed under this one.
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
      const handle = await startSession(h, {
        id,
        agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100, contextTokens: 1000 } },
      });
      for (let i = 1; i <= 4; i++) await say(handle, `turn ${i}: ${'lorem ipsum '.repeat(60)}`);
      h.mock.script(id, {
        steps: Array.from({ length: 30 }, () => ({
          reply: { content: [{ type: 'tool_use' as const, name: 'session_events', input: { from: 0, limit: 2 } }] },
        })),
      });
      await say(handle, 'read the log many times');
      await say(handle, 'and the end');
      const runs = await runsOf(h.env.client, id);
      if (runs.length < 3) throw new Error(`expected several runs, got ${runs.length}`);
      await h.env.client.workflow.getHandle(id).signal(endSignal, { reason: 'recorded' });
      await h.env.client.workflow.getHandle(id).result();
      // The first run (compactions, a handover at idle), two that began mid-turn, and the last (sealed at the end).
      const keep = new Set([0, 1, runs.length - 2, runs.length - 1]);
      for (const [i, run] of runs.entries()) {
        if (!keep.has(i)) continue;
        const file = path.join(DIR, `long-session-run-${i + 1}.json`);
        if (!fs.existsSync(file))
          fs.writeFileSync(file, historyToJSON(await h.env.client.workflow.getHandle(id, run.runId).fetchHistory()));
      }
    } finally {
      await h.stop();
    }
  },
);

record('records a woken run (`agents wake` after the run was terminated mid-turn) and a forked session', async () => {
  const h = await startHarness();
  const agent = { tools: ['session_events' as const], sandboxes: {} };
  const ids = ['recorded-woken', 'recorded-fork-source', 'recorded-forked'];
  // A session id is used once: clear what an earlier recording sealed under these.
  for (const id of ids) fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
  try {
    const first = await startSession(h, { id: ids[0], agent });
    await say(first, 'remember the word zebra');
    h.mock.script(ids[0], { steps: [{ firstByteDelayMs: 60_000 }] });
    await first.executeUpdate(sendMessageUpdate, { args: [{ text: 'a slow one' }] });
    while (h.mock.requests(ids[0]).length < 2) await new Promise((r) => setTimeout(r, 50));
    await first.terminate('recorded loss of the run');
    await wakeSession(h.env.client, testArchive(), ids[0]);
    // A woken run starts a new chain: reach it by id alone.
    const woken = h.env.client.workflow.getHandle(ids[0]);
    await waitForEvents(woken, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 2);
    await say(woken, 'which word?');
    await endAndSave(woken, 'woken-session.json');

    const source = await startSession(h, { id: ids[1], agent });
    await say(source, 'alpha');
    await say(source, 'beta');
    await forkSession(h.env.client, testArchive(), logOf(source), {
      source: ids[1],
      at: 3,
      id: ids[2],
      message: { text: 'gamma' },
    });
    const fork = h.env.client.workflow.getHandle(ids[2]);
    await waitForEvents(fork, (ev) => ev.some((e) => e.type === 'assistant_message' && e.seq > 3));
    h.mock.script(ids[2], { steps: [readLogStep] });
    await say(fork, RECORDED_READ_LOG);
    await endAndSave(fork, 'forked-session.json');
    await source.signal(endSignal, { reason: 'recorded' });
  } finally {
    await h.stop();
  }
});

record(
  'records sub-agents and hand-offs: a parent, a child with a lent sandbox, a receiver, and a parent that continued as new while a child ran',
  async () => {
    const h = await startHarness({ role: 'all', hostId: 'recorder' });
    const ids = ['recorded-subagent-parent', 'recorded-handoff-receiver', 'recorded-subagent-can'];
    const lentChild = childSessionId(ids[0], 'toolu_lend');
    const slowChild = childSessionId(ids[2], 'toolu_slow');
    // A session id is used once: clear what an earlier recording sealed under these.
    for (const id of [...ids, lentChild, childSessionId(ids[0], 'toolu_own'), slowChild])
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
    try {
      const tools = ['bash' as const, 'spawn_agent' as const, 'handoff_sandbox' as const];
      // Each child runs the command its task names, as the fixtures of the children recorded.
      h.mock.script(lentChild, { steps: [toolStep('bash', { command: 'cat kept.txt' }, RECORDED_RUN)] });
      h.mock.script(childSessionId(ids[0], 'toolu_own'), {
        steps: [toolStep('bash', { command: 'echo own' }, RECORDED_RUN)],
      });
      const parent = await startSession(h, { id: ids[0], agent: { tools } });
      const receiver = await startSession(h, { id: ids[1], agent: { tools } });
      await bash(h, parent, 'echo kept > kept.txt');
      await turn(h, parent, [
        { type: 'tool_use', id: 'toolu_denied', name: 'bash', input: { command: 'cat kept.txt' } },
        spawn('toolu_lend', { task: 'Run `cat kept.txt`', sandboxes: ['main'] }),
        spawn('toolu_own', { task: 'Run `echo own`' }),
      ]);
      await callTool(h, parent, 'handoff_sandbox', { sandbox: 'main', to: ids[1] });
      await bash(h, parent, 'cat kept.txt');
      await bash(h, receiver, 'cat kept.txt');
      const child = h.env.client.workflow.getHandle(lentChild);
      await child.result();
      if (!fs.existsSync(path.join(DIR, 'subagent-child.json')))
        fs.writeFileSync(path.join(DIR, 'subagent-child.json'), historyToJSON(await child.fetchHistory()));
      await endAndSave(parent, 'subagent-parent.json');
      await endAndSave(receiver, 'handoff-receiver.json');

      const can = await startSession(h, {
        id: ids[2],
        agent: { tools: ['spawn_agent'], sandboxes: {}, limits: { historyEvents: 100 } },
      });
      h.mock.script(slowChild, {
        steps: [{ gate: 'recorded-slow', reply: { content: [{ type: 'text', text: 'slow answer' }] } }],
      });
      h.mock.script(ids[2], { steps: [{ reply: { content: [spawn('toolu_slow', { task: 'take your time' })] } }] });
      await can.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
      await waitForEvents(can, (ev) => ev.some((e) => e.type === 'subagent_started'));
      for (let i = 0; (await can.describe()).historyLength < 110; i++)
        await can.signal(userMessageSignal, { text: `note ${i}` });
      while ((await runsOf(h.env.client, ids[2])).length < 2) await new Promise((r) => setTimeout(r, 200));
      h.mock.release('recorded-slow');
      await waitForEvents(can, (ev) => ev.some((e) => e.type === 'tool_result' && e.toolUseId === 'toolu_slow'));
      await h.env.client.workflow.getHandle(ids[2]).signal(endSignal, { reason: 'recorded' });
      await h.env.client.workflow.getHandle(ids[2]).result();
      const runs = await runsOf(h.env.client, ids[2]);
      for (const [i, run] of runs.slice(0, 2).entries()) {
        const file = path.join(DIR, `subagent-can-run-${i + 1}.json`);
        if (!fs.existsSync(file))
          fs.writeFileSync(
            file,
            historyToJSON(await h.env.client.workflow.getHandle(ids[2], run.runId).fetchHistory()),
          );
      }
    } finally {
      await h.stop();
    }
  },
);

record(
  'records a coordinator session: a delegated thread in its sandbox, a follow-up, an archived thread',
  async () => {
    const h = await startHarness({ role: 'all', hostId: 'recorder' });
    const id = 'recorded-threads-coordinator';
    const thread = childSessionId(id, 'toolu_delegate');
    for (const x of [id, thread])
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', x), { recursive: true, force: true });
    try {
      h.mock.script(thread, {
        steps: [
          toolStep('bash', { command: 'echo shared > shared.txt' }, RECORDED_RUN),
          { reply: { content: [{ type: 'text', text: 'wrote it' }] } },
        ],
      });
      const coordinator = await startSession(h, {
        id,
        agent: {
          tools: ['bash', 'delegate', 'message_thread'],
          roster: [{ name: 'helper', agent: { name: 'helper', model: testAgent().model, tools: ['bash'] } }],
        },
      });
      await turn(h, coordinator, [
        {
          type: 'tool_use',
          id: 'toolu_delegate',
          name: 'delegate',
          input: { agent: 'helper', message: 'write shared.txt' },
        },
      ]);
      const created = (await waitForEvents(coordinator, (ev) => ev.some((e) => e.type === 'thread_created'))).find(
        (e) => e.type === 'thread_created',
      ) as { threadId: string };
      h.mock.script(thread, { steps: [{ reply: { content: [{ type: 'text', text: 'still here' }] } }] });
      await turn(h, coordinator, [
        {
          type: 'tool_use',
          id: 'toolu_follow',
          name: 'message_thread',
          input: { thread_id: created.threadId, message: 'more?' },
        },
      ]);
      await coordinator.executeUpdate(archiveThreadUpdate, { args: [{ threadId: created.threadId }] });
      await h.env.client.workflow.getHandle(thread).result();
      if (!fs.existsSync(path.join(DIR, 'threads-thread.json')))
        fs.writeFileSync(
          path.join(DIR, 'threads-thread.json'),
          historyToJSON(await h.env.client.workflow.getHandle(thread).fetchHistory()),
        );
      await endAndSave(coordinator, 'threads-coordinator.json');
    } finally {
      await h.stop();
    }
  },
);

record(
  "records a thread's calls cross-posted to its coordinator: a confirmation, then a client tool's result",
  async () => {
    const h = await startHarness({ role: 'all', hostId: 'recorder' });
    const id = 'recorded-threads-cross-post-coordinator';
    const thread = childSessionId(id, 'toolu_delegate');
    for (const x of [id, thread])
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', x), { recursive: true, force: true });
    try {
      const form = {
        name: 'ask_owner',
        description: 'Asks the owner.',
        input_schema: { type: 'object' as const, properties: { question: { type: 'string' } } },
      };
      h.mock.script(thread, {
        steps: [
          toolStep('bash', { command: 'echo asked' }),
          toolStep('ask_owner', { question: 'colour?' }),
          { reply: { content: [{ type: 'text', text: 'the owner said teal' }] } },
        ],
      });
      const coordinator = await startSession(h, {
        id,
        agent: {
          tools: ['bash', 'delegate', 'message_thread'],
          roster: [
            {
              name: 'careful',
              agent: {
                name: 'careful',
                model: testAgent().model,
                tools: ['bash'],
                policies: { bash: 'always_ask' },
                clientTools: [form],
              },
            },
          ],
        },
      });
      h.mock.script(id, {
        steps: [
          {
            reply: {
              content: [
                {
                  type: 'tool_use',
                  id: 'toolu_delegate',
                  name: 'delegate',
                  input: { agent: 'careful', message: 'ask first' },
                },
              ],
            },
          },
          { reply: { content: [{ type: 'text', text: 'teal, then' }] } },
        ],
      });
      const { seq } = await coordinator.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
      const waiting = (n: number) => async () =>
        (
          await waitForEvents(
            coordinator,
            (ev) => ev.filter((e) => e.type === 'thread_tool_call' && e.state === 'waiting').length >= n,
          )
        ).filter((e) => e.type === 'thread_tool_call' && e.state === 'waiting')[n - 1] as { toolUseId: string };
      const threadHandle = h.env.client.workflow.getHandle(thread);
      const asked = await waiting(1)();
      await threadHandle.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: asked.toolUseId, allow: true }] });
      const custom = await waiting(2)();
      await threadHandle.executeUpdate(submitToolResultUpdate, {
        args: [{ toolUseId: custom.toolUseId, output: 'teal' }],
      });
      const done = await waitForEvents(coordinator, turnDone(seq));
      const created = done.find((e) => e.type === 'thread_created') as { threadId: string };
      await coordinator.executeUpdate(archiveThreadUpdate, { args: [{ threadId: created.threadId }] });
      await threadHandle.result();
      if (!fs.existsSync(path.join(DIR, 'threads-cross-post-thread.json')))
        fs.writeFileSync(
          path.join(DIR, 'threads-cross-post-thread.json'),
          historyToJSON(await threadHandle.fetchHistory()),
        );
      await endAndSave(coordinator, 'threads-cross-post-coordinator.json');
    } finally {
      await h.stop();
    }
  },
);

const turnEnded = (ev: { type: string; stopReason?: string | null }[], n: number) =>
  ev.filter((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn').length >= n;

record(
  'records approvals: a call allowed by its policy, approved, denied, timed out, and pending across a handover',
  async () => {
    const h = await startHarness({ role: 'all', hostId: 'recorder' });
    try {
      const handle = await startSession(h, {
        id: 'recorded-approvals',
        agent: {
          policies: {
            bash: { ask: ['git push*'] },
            session_events: { default: 'ask', timeoutSeconds: 1, onTimeout: 'allow' },
          },
        },
      });
      h.mock.script(handle.workflowId, {
        steps: [
          toolStep('bash', { command: 'ls' }),
          toolStep('bash', { command: 'git push origin main' }),
          toolStep('bash', { command: 'git push -f' }),
        ],
      });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'list, then push twice' }] });
      const [approve] = await requiresAction(handle);
      await handle.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: approve.toolUseId, allow: true }] });
      for (;;) {
        const [next] = await requiresAction(handle);
        if (next.toolUseId === approve.toolUseId) continue;
        await handle.executeUpdate(resolveToolUseUpdate, {
          args: [{ toolUseId: next.toolUseId, allow: false, reason: 'no force pushes' }],
        });
        break;
      }
      await waitForEvents(handle, (ev) => turnEnded(ev, 1));
      h.mock.script(handle.workflowId, { steps: [toolStep('session_events', { from: 0, limit: 1 })] });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
      await waitForEvents(handle, (ev) => turnEnded(ev, 2));
      await endAndSave(handle, 'approvals-session.json');

      const id = 'recorded-approvals-handover';
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
      const cont = await startSession(h, {
        id,
        agent: {
          tools: ['session_events'],
          sandboxes: {},
          policies: { session_events: 'always_ask' },
          limits: { historyEvents: 100 },
        },
      });
      h.mock.script(id, { steps: [toolStep('session_events', { from: 0, limit: 1 })] });
      await cont.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log' }] });
      const [pending] = await requiresAction(cont);
      // Messages grow the history past 100 events: the run hands over with the approval pending.
      await messagesUntilHandover(cont);
      const live = h.env.client.workflow.getHandle(id);
      await requiresAction(live);
      await live.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: pending.toolUseId, allow: true }] });
      await waitForEvents(live, (ev) => turnEnded(ev, 1));
      await live.signal(endSignal, { reason: 'recorded' });
      await live.result();
      const runs = await runsOf(h.env.client, id);
      for (const [i, run] of runs.entries()) {
        const file = path.join(DIR, `approvals-handover-run-${i + 1}.json`);
        if (!fs.existsSync(file))
          fs.writeFileSync(file, historyToJSON(await h.env.client.workflow.getHandle(id, run.runId).fetchHistory()));
      }
    } finally {
      await h.stop();
    }
  },
);

record(
  'records the auto policy: a call its judge allows on a retry, and one it escalates across a handover',
  async () => {
    const h = await startHarness();
    try {
      const id = 'recorded-auto-policy';
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
      const handle = await startSession(h, {
        id,
        agent: {
          tools: ['session_events'],
          sandboxes: {},
          policies: { session_events: 'auto' },
          limits: { historyEvents: 100 },
        },
      });
      h.mock.script(id, {
        steps: [toolStep('session_events', { from: 0, limit: 1 }), toolStep('session_events', { from: 1, limit: 1 })],
      });
      // The first judgement fails once, then the built-in judge allows; the second is scripted to ask.
      h.mock.script(judgeScriptKey(id), {
        steps: [
          { status: 500 },
          {},
          { reply: { content: [{ type: 'text', text: 'DECISION: ASK\nREASON: recorded.' }] } },
        ],
      });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log twice' }] });
      const [pending] = await requiresAction(handle);
      await messagesUntilHandover(handle);
      const live = h.env.client.workflow.getHandle(id);
      await requiresAction(live);
      await live.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: pending.toolUseId, allow: true }] });
      await waitForEvents(live, (ev) => turnEnded(ev, 1));
      await live.signal(endSignal, { reason: 'recorded' });
      await live.result();
      const runs = await runsOf(h.env.client, id);
      for (const [i, run] of runs.entries()) {
        const file = path.join(DIR, `auto-policy-run-${i + 1}.json`);
        if (!fs.existsSync(file))
          fs.writeFileSync(file, historyToJSON(await h.env.client.workflow.getHandle(id, run.runId).fetchHistory()));
      }
    } finally {
      await h.stop();
    }
  },
);

record(
  'records a client tool: invalid input, a result, an error result, and a call interrupted while it waits',
  async () => {
    const h = await startHarness();
    try {
      const form = {
        name: 'ask_user_form',
        description: 'Asks the user.',
        input_schema: { type: 'object' as const, properties: { question: { type: 'string' } }, required: ['question'] },
      };
      const handle = await startSession(h, {
        id: 'recorded-client-tool',
        agent: { tools: ['session_events'], sandboxes: {}, clientTools: [form] },
      });
      h.mock.script(handle.workflowId, {
        steps: [
          toolStep('ask_user_form', {}),
          toolStep('ask_user_form', { question: 'colour?' }),
          toolStep('ask_user_form', { question: 'size?' }),
        ],
      });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'ask me' }] });
      const [first] = await requiresAction(handle);
      await handle.executeUpdate(submitToolResultUpdate, { args: [{ toolUseId: first.toolUseId, output: 'teal' }] });
      for (;;) {
        const [next] = await requiresAction(handle);
        if (next.toolUseId === first.toolUseId) continue;
        await handle.executeUpdate(submitToolResultUpdate, {
          args: [{ toolUseId: next.toolUseId, output: 'form closed', isError: true }],
        });
        break;
      }
      await waitForEvents(handle, (ev) => turnEnded(ev, 1));
      h.mock.script(handle.workflowId, { steps: [toolStep('ask_user_form', { question: 'again?' })] });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'once more' }] });
      await requiresAction(handle);
      await handle.signal(interruptSignal, { reason: 'user left' });
      await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
      await endAndSave(handle, 'client-tool-session.json');
    } finally {
      await h.stop();
    }
  },
);

record('records harness default@1 and default@2 sessions given empty replies', async () => {
  const h = await startHarness();
  try {
    const empty = { reply: { content: [] } };
    for (const version of [1, 2]) {
      const handle = await startSession(h, {
        id: `recorded-harness-v${version}`,
        agent: { harness: `default@${version}`, tools: ['session_events'], sandboxes: {} },
      });
      h.mock.script(handle.workflowId, {
        steps: [empty, { reply: { content: [{ type: 'text', text: 'Here is my answer.' }] } }, empty, empty, empty],
      });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'answer me' }] });
      await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length >= version);
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'and again' }] });
      await waitForEvents(
        handle,
        (ev) => ev.filter((e) => e.type === 'assistant_message').length >= (version === 1 ? 2 : 5),
      );
      // default@1 used two of the five steps above: the third, empty, answered this in its fixture.
      h.mock.script(handle.workflowId, { steps: [version === 1 ? empty : readLogStep] });
      await say(handle, RECORDED_READ_LOG);
      await endAndSave(handle, `harness-v${version}-session.json`);
    }
  } finally {
    await h.stop();
  }
});

record('records a session answering a message that arrived while the model was generating', async () => {
  const h = await startHarness();
  try {
    const handle = await startSession(h, {
      id: 'recorded-causal-order',
      agent: { tools: ['session_events'], sandboxes: {} },
    });
    const id = handle.workflowId;
    h.mock.script(id, {
      steps: [{ gate: `${id}-reply`, reply: { content: [{ type: 'text', text: 'Thinking it over.' }] } }],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'first' }] });
    while (h.mock.requests(id).length < 1) await new Promise((r) => setTimeout(r, 25));
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'sent while the model was generating' }] });
    await handle.signal(userMessageSignal, { text: 'and a signal meanwhile', messageId: 'late' });
    h.mock.release(`${id}-reply`);
    await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length >= 2);
    await endAndSave(handle, 'causal-order-session.json');
  } finally {
    await h.stop();
  }
});

record(
  "records MCP tool calls under their server's default policy (mcp__<server>__*): one held and approved, one allowed by its own policy",
  async () => {
    const tracker = await startTrackerServer();
    const vaultDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-record-vault-'));
    const vault = new FileVault(vaultDir, crypto.randomBytes(32).toString('base64'));
    await vault.put('recorder', 'tracker-oauth', tracker.issue('recorder').accessToken);
    const h = await startHarness();
    const tools = await startTestWorker(h.env.address, h.mock.url, { role: 'tools', vault });
    const id = 'recorded-mcp-default-policy-session';
    fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
    try {
      const handle = await startSession(h, {
        id,
        agent: {
          vault: 'recorder',
          tools: ['session_events'],
          sandboxes: {},
          mcpServers: { tracker: { transport: 'http', url: tracker.url, credential: 'vault:tracker-oauth' } },
          policies: { 'mcp__tracker__*': 'always_ask', mcp__tracker__whoami: 'always_allow' },
        },
      });
      h.mock.script(id, {
        steps: [
          toolStep('mcp__tracker__create_issue', { title: 'held' }),
          toolStep('mcp__tracker__whoami', {}),
          { reply: { content: [{ type: 'text', text: 'Done.' }] } },
        ],
      });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'file it' }] });
      const [held] = await requiresAction(handle);
      await handle.executeUpdate(resolveToolUseUpdate, { args: [{ toolUseId: held.toolUseId, allow: true }] });
      await waitForEvents(handle, (ev) =>
        ev.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn'),
      );
      await endAndSave(handle, 'mcp-default-policy-session.json');
    } finally {
      await tools.shutdown();
      await h.stop();
      await tracker.stop();
      fs.rmSync(vaultDir, { recursive: true, force: true });
    }
  },
);

record(
  "records model calls whose input carries the digest of the events since the run's previous call (model-tail-digest)",
  async () => {
    const h = await startHarness();
    try {
      const handle = await startSession(h, { id: 'recorded-model-tail-digest', agent: { tools: ['session_events'] } });
      h.mock.script(handle.workflowId, {
        steps: [
          toolStep('session_events', { from: 0, limit: 2 }),
          { reply: { content: [{ type: 'text', text: 'Read it.' }] } },
          { reply: { content: [{ type: 'text', text: 'Again.' }] } },
        ],
      });
      await say(handle, 'Read the log.');
      await say(handle, 'Once more.');
      await endAndSave(handle, 'model-tail-digest-session.json');
    } finally {
      await h.stop();
    }
  },
);

record(
  'records a quick turn never published as running and a slow one published after the delay (state-running-delay)',
  async () => {
    const h = await startHarness();
    try {
      const handle = await startSession(h, { id: 'recorded-state-running-delay' });
      h.mock.script(handle.workflowId, {
        steps: [
          { reply: { content: [{ type: 'text', text: 'Quick.' }] } },
          { firstByteDelayMs: RUNNING_PUBLISH_DELAY_MS + 1500, reply: { content: [{ type: 'text', text: 'Slow.' }] } },
        ],
      });
      await say(handle, 'A quick one.');
      await say(handle, 'A slow one.');
      await endAndSave(handle, 'state-running-delay-session.json');
    } finally {
      await h.stop();
    }
  },
);

record("records model calls that send the platform's tool specs by reference (model-tool-refs)", async () => {
  const h = await startHarness();
  try {
    const handle = await startSession(h, {
      id: 'recorded-model-tool-refs',
      agent: {
        tools: ['session_events', 'bash', 'read'],
        clientTools: [
          {
            name: 'lookup_order',
            description: 'Looks an order up.',
            input_schema: { type: 'object', properties: { id: { type: 'string' } } },
          },
        ],
      },
    });
    h.mock.script(handle.workflowId, {
      steps: [
        toolStep('session_events', { from: 0, limit: 2 }),
        { reply: { content: [{ type: 'text', text: 'Read it.' }] } },
      ],
    });
    await say(handle, 'Read the log.');
    await endAndSave(handle, 'model-tool-refs-session.json');
  } finally {
    await h.stop();
  }
});

record("records model calls run as local activities, handed their window's events (model-local-activity)", async () => {
  const h = await startHarness();
  try {
    const handle = await startSession(h, {
      id: 'recorded-model-local-activity',
      agent: { tools: ['session_events'], limits: { modelCall: 'local' } },
    });
    h.mock.script(handle.workflowId, {
      steps: [
        toolStep('session_events', { from: 0, limit: 2 }),
        { reply: { content: [{ type: 'text', text: 'Read it.' }] } },
        { reply: { content: [{ type: 'text', text: 'Again.' }] } },
      ],
    });
    await say(handle, 'Read the log.');
    await say(handle, 'Once more.');
    await endAndSave(handle, 'model-local-activity-session.json');
  } finally {
    await h.stop();
  }
});

record(
  'records model calls whose transient failures the workflow logs and waits for, an interrupt cutting one wait (model-retry-event)',
  async () => {
    const h = await startHarness();
    try {
      const handle = await startSession(h, { id: 'recorded-model-retry' });
      h.mock.script(handle.workflowId, { steps: [{ status: 529 }, { status: 429, retryAfter: 1 }] });
      await say(handle, 'Hello through the storm.');
      h.mock.script(handle.workflowId, { steps: [{ status: 429, retryAfter: 3600 }] });
      await handle.signal(userMessageSignal, { text: 'Wait for it.' });
      await waitForEvents(handle, (events) =>
        events.some(
          (e) => e.type === 'model_retry_scheduled' && e.retryAt > new Date(Date.now() + 60_000).toISOString(),
        ),
      );
      await handle.signal(interruptSignal, { reason: 'too slow' });
      await waitForEvents(handle, (events) => events.some((e) => e.type === 'interrupted'));
      await say(handle, 'Hello again.');
      await endAndSave(handle, 'model-retry-session.json');
      // The same through a local model call.
      const local = await startSession(h, {
        id: 'recorded-model-retry-local',
        agent: { limits: { modelCall: 'local' } },
      });
      h.mock.script(local.workflowId, { steps: [{ status: 503 }] });
      await say(local, 'Hello, locally.');
      await endAndSave(local, 'model-retry-local-session.json');
    } finally {
      await h.stop();
    }
  },
);

record('records malformed sandbox tool calls, refused before any sandbox is provisioned', async () => {
  const h = await startHarness();
  try {
    const handle = await startSession(h, {
      id: 'recorded-malformed-tool-input',
      agent: { tools: ['bash', 'str_replace_based_edit_tool'] },
    });
    h.mock.script(handle.workflowId, {
      steps: [toolStep('bash', { command: '' }), toolStep('str_replace_based_edit_tool', { command: 'view' })],
    });
    await say(handle, 'Run something');
    await endAndSave(handle, 'malformed-tool-input-session.json');
  } finally {
    await h.stop();
  }
});

record(
  'records a session updated and interrupted through the acknowledged updates, between turns and in one',
  async () => {
    const h = await startHarness();
    try {
      const handle = await startSession(h, { id: 'recorded-acknowledged' });
      await handle.executeUpdate(updateSessionUpdate, { args: [{ title: 'recorded', metadata: { team: 'red' } }] });
      await handle.executeUpdate(interruptUpdate, { args: [{ reason: 'between turns' }] });
      h.mock.script(handle.workflowId, { steps: [{ gate: 'recorded-interrupt' }] });
      await handle.signal(userMessageSignal, { text: 'Wait for it.' });
      await waitForEvents(handle, () => h.mock.requests(handle.workflowId).length > 0);
      await handle.executeUpdate(interruptUpdate, { args: [{ reason: 'in a turn' }] });
      h.mock.release('recorded-interrupt');
      await say(handle, 'Hello again.');
      await endAndSave(handle, 'acknowledged-session.json');
    } finally {
      await h.stop();
    }
  },
);

record(
  "records a self-hosted environment's tool: a call no worker answers times out, the next is answered",
  async () => {
    const h = await startHarness();
    try {
      const read = {
        name: 'read',
        description: "Reads a file in the worker's directory.",
        input_schema: {
          type: 'object' as const,
          properties: { file_path: { type: 'string' } },
          required: ['file_path'],
        },
        runsIn: 'environment' as const,
        timeoutSeconds: 2,
      };
      const handle = await startSession(h, {
        id: 'recorded-environment-tool',
        agent: { tools: [], sandboxes: {}, clientTools: [read] },
      });
      h.mock.script(handle.workflowId, {
        steps: [toolStep('read', { file_path: 'first.txt' }), toolStep('read', { file_path: 'second.txt' })],
      });
      await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read both' }] });
      // The first call waits its 2 s and becomes an error result; the second is answered as a worker would.
      const events = await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'tool_use').length >= 2);
      const second = events.filter((e) => e.type === 'tool_use')[1] as { id: string };
      await handle.executeUpdate(submitToolResultUpdate, { args: [{ toolUseId: second.id, output: 'contents' }] });
      await waitForEvents(handle, (ev) => turnEnded(ev, 1));
      await endAndSave(handle, 'environment-tool-session.json');
    } finally {
      await h.stop();
    }
  },
);

record('records a session that stops at its budget, is raised, and goes on', async () => {
  const h = await startHarness();
  try {
    const agent = testAgent({ model: 'claude-haiku-4-5' });
    const handle = await h.env.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: 'recorded-budget-session',
      args: [
        {
          agent,
          listCost: { prices: { 'claude-haiku-4-5': { input: 1, output: 5 } }, budget: { amount: 3, currency: 'USD' } },
        },
      ],
    });
    // 1.2 cents a call: the third reaches the budget of 3 cents, and the fourth message stops before its call.
    const usage = { input_tokens: 10_000, output_tokens: 400, cache_read_input_tokens: 0 };
    const reply = (text: string) => ({ reply: { content: [{ type: 'text' as const, text }], usage } });
    h.mock.script(handle.workflowId, { steps: [reply('one'), reply('two'), reply('three'), reply('four')] });
    for (const text of ['one', 'two', 'three', 'four']) await say(handle, text);
    await handle.executeUpdate(updateSessionUpdate, { args: [{ budget: { amount: 10, currency: 'USD' } }] });
    await say(handle, 'five');
    await endAndSave(handle, 'budget-session.json');
  } finally {
    await h.stop();
  }
});

record(
  'records outcomes: one graded across a handover, its grader retried, revised once and satisfied; one interrupted while graded',
  async () => {
    const h = await startHarness();
    try {
      const id = 'recorded-outcome';
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
      const handle = await startSession(h, {
        id,
        agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
      });
      const say = (text: string) => ({ reply: { content: [{ type: 'text' as const, text }] } });
      const verdict = (v: string, explanation: string) => say(`VERDICT: ${v}\nEXPLANATION: ${explanation}`);
      // The first turn's tool rounds outgrow the run's history: it hands over mid-turn, and the next run grades.
      const reads = Array.from({ length: 14 }, (_, i) => toolStep('session_events', { from: i, limit: 1 }));
      h.mock.script(id, { steps: [...reads, say('Waves'), say('Waves\nsalt wind on the shore'), say('a second try')] });
      h.mock.script(graderScriptKey(id), {
        steps: [
          { status: 500 },
          verdict('NEEDS_REVISION', 'one line only'),
          verdict('SATISFIED', 'recorded'),
          { gate: 'recorded-grader', ...verdict('SATISFIED', 'never seen') },
        ],
      });
      const outcome = (n: number) => ({
        outcomeId: `outc_recorded${n}`,
        description: 'Write a haiku about the sea.',
        rubric: 'Three lines about the sea.',
        maxIterations: 3,
      });
      await handle.executeUpdate(defineOutcomeUpdate, { args: [outcome(1)] });
      const live = h.env.client.workflow.getHandle(id);
      const resultOf = async (n: number) => (await live.query(statusQuery)).outcomes?.[n]?.result;
      const until = async (n: number, result: string) => {
        for (let i = 0; (await resultOf(n)) !== result; i++) {
          if (i >= 600) throw new Error(`outcome ${n} never became ${result}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await until(0, 'satisfied');
      await live.executeUpdate(defineOutcomeUpdate, { args: [outcome(2)] });
      await until(1, 'evaluating');
      await live.executeUpdate(interruptUpdate, { args: [{ reason: 'recorded' }] });
      await until(1, 'interrupted');
      h.mock.release('recorded-grader');
      await live.signal(endSignal, { reason: 'recorded' });
      await live.result();
      const runs = await runsOf(h.env.client, id);
      if (runs.length < 2) throw new Error('the outcome did not span a handover');
      for (const [i, run] of runs.entries()) {
        const file = path.join(DIR, `outcome-run-${i + 1}.json`);
        if (!fs.existsSync(file))
          fs.writeFileSync(file, historyToJSON(await h.env.client.workflow.getHandle(id, run.runId).fetchHistory()));
      }
    } finally {
      await h.stop();
    }
  },
);

record(
  "records a session whose agent's tools an update replaced while idle: it hands over to a run with them",
  async () => {
    const h = await startHarness();
    try {
      const id = 'recorded-agent-update';
      fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
      const tool = (name: string) => ({
        name,
        description: name,
        input_schema: { type: 'object' as const, properties: {} },
      });
      const handle = await startSession(h, {
        id,
        agent: { tools: ['session_events'], sandboxes: {}, clientTools: [tool('before')] },
      });
      const reply = { reply: { content: [{ type: 'text' as const, text: 'ok' }] } };
      h.mock.script(id, { steps: [reply, reply] });
      await say(handle, 'one');
      await handle.executeUpdate(updateSessionUpdate, {
        args: [
          {
            agent: {
              tools: { tools: ['session_events'], clientTools: [tool('after')], mcpServers: {}, policies: {} },
              snapshot: { id: 'agent_recorded', tools: [{ type: 'custom', name: 'after' }] },
            },
          },
        ],
      });
      const runs = async () => (await runsOf(h.env.client, id)).length;
      for (let i = 0; (await runs()) < 2; i++) {
        if (i >= 600) throw new Error('the update did not hand over');
        await new Promise((r) => setTimeout(r, 100));
      }
      const live = h.env.client.workflow.getHandle(id);
      await say(live, 'two');
      if (!JSON.stringify(h.mock.requests(id)[1]?.body.tools ?? []).includes('"after"'))
        throw new Error('the turn after the update was not offered the new tool');
      await live.signal(endSignal, { reason: 'recorded' });
      await live.result();
      for (const [i, run] of (await runsOf(h.env.client, id)).entries()) {
        const file = path.join(DIR, `agent-update-run-${i + 1}.json`);
        if (!fs.existsSync(file))
          fs.writeFileSync(file, historyToJSON(await h.env.client.workflow.getHandle(id, run.runId).fetchHistory()));
      }
    } finally {
      await h.stop();
    }
  },
);

record('records a webhook delivery tried again after a 500', async () => {
  const hits: number[] = [];
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(hits.push(Date.now()) === 1 ? 500 : 204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  process.env.EGRESS_ALLOW = new URL(url).host;
  process.env.WEBHOOK_RETRY_DELAYS = '1,1';
  process.env.WEBHOOK_RELAY_INTERVAL_MS = '100';
  const h = await startHarness();
  const api = await startApiOn(h);
  const tools = await startTestWorker(h.env.address, h.mock.url, {
    role: 'tools',
    vaultKey: api.vaultKey,
    apiDb: () => api.db,
  });
  try {
    const endpoint = await addWebhookEndpoint(api.db!, await vaultPublicKey(api.vaultKey), {
      workspaceId: 'wrkspc_default',
      url,
      events: 'environment.created',
    });
    const client = await api.client();
    await client.beta.environments.create({ name: 'recorded-hooks' });
    const [event] = await listWebhookEvents(api.db!, 'wrkspc_default', 1);
    const delivery = h.env.client.workflow.getHandle(deliveryWorkflowId(event.id, endpoint.id));
    for (let i = 0; i < 600 && !(await delivery.describe().catch(() => undefined)); i++)
      await new Promise((r) => setTimeout(r, 100));
    await delivery.result();
    const file = path.join(DIR, 'webhook-delivery.json');
    if (fs.existsSync(file)) process.stderr.write('webhook-delivery.json exists; not overwritten\n');
    else fs.writeFileSync(file, historyToJSON(await delivery.fetchHistory()));
  } finally {
    await tools.shutdown().catch(() => undefined);
    await api.stop();
    await h.stop();
    receiver.close();
  }
});

record('records an API session (`sesn_` id) whose status changes start webhook event children', async () => {
  const h = await startHarness();
  try {
    const handle = await h.env.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: 'sesn_recorded-webhook-session',
      args: [{ agent: testAgent() }],
    });
    h.mock.script(handle.workflowId, { steps: [{ reply: { content: [{ type: 'text', text: 'hello' }] } }] });
    await say(handle, 'Hello.');
    await endAndSave(handle, 'api-webhook-session.json');
  } finally {
    await h.stop();
  }
});

record('records an API session told by signal that its status changes now go to the outbox', async () => {
  const h = await startHarness();
  try {
    const handle = await h.env.client.workflow.start(sessionWorkflow, {
      taskQueue: BRAIN_TASK_QUEUE,
      workflowId: 'sesn_recorded-webhook-gate',
      // No endpoint took its status events at the start: the first turn starts no child.
      args: [{ agent: testAgent(), statusWebhooks: { on: false, at: 1 } }],
    });
    h.mock.script(handle.workflowId, {
      steps: [
        { reply: { content: [{ type: 'text', text: 'one' }] } },
        { reply: { content: [{ type: 'text', text: 'two' }] } },
      ],
    });
    await say(handle, 'One.');
    // An endpoint was added: the second turn's changes start their children; an older word is dropped.
    await handle.signal(statusWebhooksSignal, { on: true, at: 3 });
    await handle.signal(statusWebhooksSignal, { on: false, at: 2 });
    await say(handle, 'Two.');
    await endAndSave(handle, 'api-webhook-gate.json');
  } finally {
    await h.stop();
  }
});

/** Runs `record` on a harness whose hands host `hostId` keeps workspace snapshots in the API's database. */
async function withSnapshotsHost(hostId: string, record: (h: Harness, hostId: string) => Promise<void>): Promise<void> {
  const h = await startHarness({ role: 'brain' });
  const api = await startApiOn(h);
  const hands = await startTestWorker(h.env.address, h.mock.url, {
    role: 'hands',
    hostId,
    apiDb: () => api.db,
    reapIntervalMs: 0,
  });
  try {
    await record(h, hostId);
  } finally {
    await hands.shutdown().catch(() => undefined);
    await removeHostSandboxes(hostId).catch(() => undefined);
    await api.stop();
    await h.stop();
  }
}

record('records a session whose workspace is snapshotted, lost with its volume, and restored', () =>
  withSnapshotsHost('recorded-snapshots-host', async (h, hostId) => {
    const handle = await startSession(h, { id: 'recorded-snapshots', agent: { name: 'snapshots', tools: ['bash'] } });
    h.mock.script(handle.workflowId, {
      steps: [
        toolStep('bash', { command: 'echo kept > kept.txt' }),
        { reply: { content: [{ type: 'text', text: 'written' }] } },
        // The container and its volume are gone: the first call is lost, the next restores the snapshot.
        toolStep('bash', { command: 'cat kept.txt' }),
        toolStep('bash', { command: 'cat kept.txt' }),
        { reply: { content: [{ type: 'text', text: 'read' }] } },
      ],
    });
    await say(handle, 'Write it.');
    await removeHostSandboxes(hostId);
    await say(handle, 'Read it.');
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'workspace_restored'));
    await endAndSave(handle, 'snapshots-session.json');
  }),
);

record('records a session whose idle sandbox is paused and resumed with its workspace restored', () =>
  withSnapshotsHost('recorded-pause-host', async (h) => {
    const handle = await startSession(h, {
      id: 'recorded-pause',
      agent: { name: 'pause', tools: ['bash'], sandboxes: { main: { idleStopMinutes: 0.05 } } },
    });
    h.mock.script(handle.workflowId, {
      steps: [
        toolStep('bash', { command: 'echo kept > kept.txt' }),
        { reply: { content: [{ type: 'text', text: 'written' }] } },
        toolStep('bash', { command: 'cat kept.txt' }),
        { reply: { content: [{ type: 'text', text: 'read' }] } },
      ],
    });
    await say(handle, 'Write it.');
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'sandbox_paused'));
    await say(handle, 'Read it.');
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'workspace_restored'));
    await endAndSave(handle, 'pause-session.json');
  }),
);

record('records a fork with files: its sandbox starts from the source snapshot at the fork point', () =>
  withSnapshotsHost('recorded-fork-files-host', async (h) => {
    const ids = ['recorded-fork-files-source', 'recorded-fork-files'];
    for (const id of ids) fs.rmSync(path.join(loadConfig().dataDir, 'archive', id), { recursive: true, force: true });
    const agent = { name: 'fork-files', tools: ['bash' as const] };
    const source = await startSession(h, { id: ids[0], agent });
    h.mock.script(ids[0], {
      steps: [
        toolStep('bash', { command: 'echo one > kept.txt' }),
        { reply: { content: [{ type: 'text', text: 'one' }] } },
      ],
    });
    await say(source, 'Write one.');
    const at = (await waitForEvents(source, () => true)).at(-1)!.seq;
    h.mock.script(ids[0], {
      steps: [
        toolStep('bash', { command: 'echo two > kept.txt' }),
        { reply: { content: [{ type: 'text', text: 'two' }] } },
      ],
    });
    await say(source, 'Write two.');
    await forkSession(h.env.client, testArchive(), logOf(source), { source: ids[0], at, id: ids[1], sandboxes: true });
    const fork = h.env.client.workflow.getHandle(ids[1]);
    h.mock.script(ids[1], {
      steps: [toolStep('bash', { command: 'cat kept.txt' }), { reply: { content: [{ type: 'text', text: 'read' }] } }],
    });
    await say(fork, 'Read it.');
    await waitForEvents(fork, (ev) => ev.some((e) => e.type === 'workspace_restored'));
    await endAndSave(fork, 'fork-files-session.json');
    await source.signal(endSignal, { reason: 'recorded' });
  }),
);

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const chosen = recordings.filter((r) => only.length === 0 || only.some((o) => r.title.includes(o)));
  if (chosen.length === 0) throw new Error(`no recording matches ${only.join(', ')}`);
  for (const r of chosen) {
    process.stderr.write(`${r.title}\n`);
    await r.run();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`error: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
