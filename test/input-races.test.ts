// Input that races the model, a tool and a handover: each message is answered once, after what was already under
// way, and no request the platform sends is one the real API would refuse. The local model server is as strict as
// the real API here: it refuses a conversation ending on an assistant turn (current models have no prefill).
import { spawnSync } from 'node:child_process';
import { sessionArchive, type SessionArchive } from '../src/archive';
import { loadConfig } from '../src/config';
import { causalOrder } from '../src/session/context';
import type { SessionEvent } from '../src/session/events';
import { putFileUpdate, sendMessageUpdate, statusQuery, userMessageSignal } from '../src/session/contract';
import {
  allEvents,
  conversationOf,
  startHarness,
  startSession,
  temporalCliPath,
  testDataConverter,
  turnDone,
  uniqueId,
  waitForEvents,
  type Harness,
} from './helpers/env';

const HOST = `test-races-${process.pid}`;

/** The test workers' archive, whose seals for one session can be held, to send input while a handover seals. */
class HeldArchive implements SessionArchive {
  private readonly inner = sessionArchive(loadConfig(), testDataConverter());
  private held?: { sessionId: string; started: () => void; release: Promise<void> };
  hold(sessionId: string): { started: Promise<void>; release: () => void } {
    let started!: () => void;
    let release!: () => void;
    const startedP = new Promise<void>((r) => (started = r));
    this.held = { sessionId, started, release: new Promise<void>((r) => (release = r)) };
    return { started: startedP, release };
  }
  async seal(...args: Parameters<SessionArchive['seal']>) {
    const held = this.held;
    if (held && held.sessionId === args[0]) {
      held.started();
      await held.release;
      this.held = undefined;
    }
    return this.inner.seal(...args);
  }
  link = (...args: Parameters<SessionArchive['link']>) => this.inner.link(...args);
  find = (...args: Parameters<SessionArchive['find']>) => this.inner.find(...args);
  readSegment = (...args: Parameters<SessionArchive['readSegment']>) => this.inner.readSegment(...args);
  segments = (...args: Parameters<SessionArchive['segments']>) => this.inner.segments(...args);
  delete = (...args: Parameters<SessionArchive['delete']>) => this.inner.delete(...args);
}

const archive = new HeldArchive();
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: HOST, archive });
});
afterAll(async () => {
  // Removes this host's sandboxes too.
  await h?.stop();
});

async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Every model request of the session was accepted (none refused as malformed), each user message appears once
 * in the log and once in the last conversation, and each is answered by a reply whose call read it.
 */
function expectAnsweredOnce(id: string, events: SessionEvent[], texts: string[]) {
  const requests = h.mock.requests(id).filter((r) => r.path === '/v1/messages');
  expect(requests.map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
  for (const r of requests) expect((conversationOf(r.body) as { role: string }[]).at(-1)?.role).toBe('user');
  expect(events.filter((e) => e.type === 'error')).toEqual([]);
  const users = events.filter((e) => e.type === 'user_message');
  for (const text of texts)
    expect([text, users.filter((e) => e.type === 'user_message' && e.text === text).length]).toEqual([text, 1]);
  const last = JSON.stringify(conversationOf(requests[requests.length - 1].body));
  for (const text of texts) expect([text, last.split(JSON.stringify(text)).length - 1]).toEqual([text, 1]);
  const replies = events.filter((e) => e.type === 'assistant_message');
  for (const u of users)
    expect([u.seq, replies.some((r) => r.type === 'assistant_message' && (r.throughSeq ?? -1) >= u.seq)]).toEqual([
      u.seq,
      true,
    ]);
  // In causal order, no message sits before a reply whose call did not read it.
  const order = causalOrder(events);
  for (const r of replies) {
    if (r.type !== 'assistant_message') continue;
    const at = order.indexOf(r);
    expect(order.slice(0, at).filter((e) => e.type === 'user_message' && e.seq > r.throughSeq!)).toEqual([]);
  }
}

describe('input that races the model, a tool and a handover', () => {
  it('answers a message sent while the model generates and one sent while a tool runs, in a real sandbox, once each', async () => {
    const handle = await startSession(h, { agent: { tools: ['bash'] } });
    const id = handle.workflowId;
    const waitForGo = 'for i in $(seq 1 1200); do [ -f /workspace/go ] && break; sleep 0.05; done; echo ran';
    h.mock.script(id, {
      steps: [
        // The first reply ends its turn; a message that arrives while it streams needs a turn of its own.
        { gate: `${id}-reply`, reply: { content: [{ type: 'text', text: 'Thinking it over.' }] } },
        {
          reply: {
            content: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', name: 'bash', input: { command: waitForGo } },
            ],
          },
        },
      ],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'run the check' }] });
    // The first call is in flight, held before its first byte.
    await until(() => h.mock.requests(id).length === 1, 'the first model call');
    await handle.executeUpdate(sendMessageUpdate, {
      args: [{ text: 'sent while the model was generating', messageId: 'gen' }],
    });
    // A retry of the same message is dropped.
    await handle.signal(userMessageSignal, { text: 'sent while the model was generating', messageId: 'gen' });
    h.mock.release(`${id}-reply`);
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'tool_use'));
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'sent while the tool ran' }] });
    expect((await allEvents(handle)).some((e) => e.type === 'tool_result')).toBe(false);
    await handle.executeUpdate(putFileUpdate, {
      args: [{ sandbox: 'main', path: 'go', contentBase64: Buffer.from('go').toString('base64') }],
    });
    // The reply after the tool answers the message that arrived meanwhile, and the turn ends.
    const events = await waitForEvents(handle, (ev) =>
      ev.some(
        (e) =>
          e.type === 'assistant_message' &&
          e.stopReason === 'end_turn' &&
          ev.some((r) => r.type === 'tool_result' && r.seq < e.seq),
      ),
    );
    expectAnsweredOnce(id, events, ['run the check', 'sent while the model was generating', 'sent while the tool ran']);
    // The first reply did not see the message sent while it was generated; the next call answered it.
    const replies = events.filter((e) => e.type === 'assistant_message');
    const gen = events.find((e) => e.type === 'user_message' && e.text === 'sent while the model was generating')!;
    expect(replies.map((r) => (r.type === 'assistant_message' ? r.throughSeq! >= gen.seq : undefined))).toEqual([
      false,
      true,
      true,
    ]);
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ output: 'ran\n[exit 0]', isError: false });
  });

  it('answers messages sent while a handover seals the log, by update, signal and the temporal CLI, once each', async () => {
    const id = uniqueId('race-handover');
    const held = archive.hold(id);
    // The smallest history budget: the run hands over between two model calls of the tool loop.
    const handle = await startSession(h, {
      id,
      agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
    });
    h.mock.script(id, {
      steps: Array.from({ length: 40 }, () => ({
        reply: { content: [{ type: 'tool_use' as const, name: 'session_events', input: { from: 0, limit: 1 } }] },
      })),
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log many times' }] });
    await held.started;
    await handle.executeUpdate(sendMessageUpdate, {
      args: [{ text: 'by update during the handover', messageId: 'u1' }],
    });
    await handle.signal(userMessageSignal, { text: 'by signal during the handover', messageId: 's1' });
    const cli = spawnSync(
      temporalCliPath(),
      [
        'workflow',
        'signal',
        '--address',
        h.env.address,
        '--workflow-id',
        id,
        '--name',
        'userMessage',
        '--input',
        '{"text":"by the CLI during the handover","messageId":"c1"}',
      ],
      { encoding: 'utf8' },
    );
    expect(cli.status).toBe(0);
    // A retry that reuses an id is dropped, whichever run it reaches.
    await handle.signal(userMessageSignal, { text: 'by signal during the handover', messageId: 's1' });
    held.release();
    const last = await handle.executeUpdate(sendMessageUpdate, {
      args: [{ text: 'and the last one', messageId: 'u2' }],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'and the last one', messageId: 'u2' }] });
    const events = await waitForEvents(handle, turnDone(last.seq), 120_000);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect((await handle.query(statusQuery)).run).toBeGreaterThan(1);
    expectAnsweredOnce(id, events, [
      'read the log many times',
      'by update during the handover',
      'by signal during the handover',
      'by the CLI during the handover',
      'and the last one',
    ]);
  });
});
