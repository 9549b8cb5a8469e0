// Multi-agent sessions through the SDK alone: an agent's `coordinator` roster (validated, stored, resolved on the
// session), a coordinator delegating to a roster agent in a session thread that shares its sandbox, the thread in
// threads.list with its own events (listed and streamed) and interleaved in the session's, a follow-up with
// message_thread, archiving and interrupting a thread, a thread whose model call fails leaving the session usable,
// and a thread's calls that wait for the client cross-posted onto the primary stream.
import Anthropic from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { eventsUntil, sayTo, type ApiEvent } from '../helpers/sdk-session';
import type { MockBlock } from '../../src/dev/model-script';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let envId: string;
let helperId: string;
let coordinatorId: string;
const gates: string[] = [];

beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: `threads-${process.pid}` });
  api = await startApiOn(h);
  client = await api.client();
  envId = (await client.beta.environments.create({ name: 'threads-env' })).id;
  helperId = (
    await client.beta.agents.create({
      name: 'helper',
      description: 'writes files',
      model: 'claude-sonnet-5-5',
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
  coordinatorId = (
    await client.beta.agents.create({
      name: 'lead',
      model: 'claude-sonnet-5-5',
      tools: [{ type: 'agent_toolset_20260401' }],
      multiagent: { type: 'coordinator', agents: [helperId, { type: 'self' }] },
    })
  ).id;
});
afterAll(async () => {
  for (const g of gates) h?.mock.release(g);
  await api?.stop();
  await h?.stop();
});

const status = (e: unknown) => (e as InstanceType<typeof Anthropic.APIError>).status;
const messageOf = (e: unknown) =>
  ((e as InstanceType<typeof Anthropic.APIError>).error as { error: { message: string } }).error.message;
async function refused(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('the request was not refused');
}

const toolUse = (id: string, name: string, input: Record<string, unknown>): MockBlock => ({
  type: 'tool_use',
  id,
  name,
  input,
});
const text = (t: string) => ({ reply: { content: [{ type: 'text' as const, text: t }] } });
const calls = (...blocks: MockBlock[]) => ({ reply: { content: blocks } });
/** The child session a delegate call starts (src/workflows/subagents.ts childSessionId). */
const threadSession = (sessionId: string, toolUseId: string) => `${sessionId}.${toolUseId}`;
const resultText = (events: ApiEvent[], toolUseEventId: string) => {
  const r = events.find(
    (e) => e.type === 'agent.tool_result' && (e as { tool_use_id: string }).tool_use_id === toolUseEventId,
  ) as { content?: { text?: string }[]; is_error?: boolean } | undefined;
  return r && { text: (r.content ?? []).map((b) => b.text ?? '').join(''), isError: r.is_error ?? false };
};
const useEventOf = (events: ApiEvent[], name: string, nth = 0) =>
  events.filter((e) => e.type === 'agent.tool_use' && (e as { name: string }).name === name)[nth]?.id;
const idleCount = (n: number) => (events: ApiEvent[]) =>
  events.filter((e) => e.type === 'session.status_idle').length >= n;
const types = (events: ApiEvent[]) => events.map((e) => e.type);
async function threadEvents(sessionId: string, threadId: string): Promise<ApiEvent[]> {
  const out: ApiEvent[] = [];
  for await (const e of client.beta.sessions.threads.events.list(threadId, { session_id: sessionId })) out.push(e);
  return out;
}

describe('an agent with a coordinator roster', () => {
  it('resolves each entry to a version, returns it typed, and refuses what it cannot run with a 400 naming it', async () => {
    const lead = await client.beta.agents.retrieve(coordinatorId);
    expect(lead.multiagent).toEqual({
      type: 'coordinator',
      agents: [
        { type: 'agent', id: helperId, version: 1 },
        { type: 'agent', id: coordinatorId, version: 1 },
      ],
    });
    const before = (await client.beta.agents.list({ limit: 100 })).data.length;
    const archived = (await client.beta.agents.create({ name: 'gone', model: 'claude-sonnet-5-5' })).id;
    await client.beta.agents.archive(archived);
    const cases: [unknown, RegExp][] = [
      [{ type: 'coordinator', agents: [] }, /multiagent.agents: agents must name at least one agent/],
      [{ type: 'coordinator', agents: Array.from({ length: 21 }, () => helperId) }, /at most 20/],
      [{ type: 'coordinator', agents: ['agent_nope'] }, /multiagent.agents.0: no agent agent_nope/],
      [{ type: 'coordinator', agents: [{ type: 'agent', id: helperId, version: 9 }] }, /has no version 9/],
      [{ type: 'coordinator', agents: [archived] }, /multiagent.agents.0: agent .* is archived/],
      [
        { type: 'coordinator', agents: [helperId, { type: 'agent', id: helperId }] },
        /agents.1: .* on the roster twice/,
      ],
      [{ type: 'coordinator', agents: [coordinatorId] }, /is itself a coordinator/],
      [{ type: 'coordinator', agents: [{ type: 'self' }, { type: 'self' }] }, /at most one self/],
      [{ type: 'coordinator', agents: [{ type: 'advisor', model: 'claude-opus-4-7' }] }, /advisor/],
      [{ type: 'multiagent_20261001' }, /multiagent_20261001 is not supported/],
    ];
    for (const [multiagent, why] of cases) {
      const e = await refused(
        client.beta.agents.create({
          name: 'bad',
          model: 'claude-sonnet-5-5',
          multiagent: multiagent as Anthropic.Beta.Sessions.BetaManagedAgentsMultiagentParams,
        }),
      );
      expect(status(e)).toBe(400);
      expect(messageOf(e)).toMatch(why);
    }
    // Nothing was stored by any refusal: only the archived agent is new.
    expect((await client.beta.agents.list({ limit: 100, include_archived: true })).data.length).toBe(before + 1);
    // An update to an existing agent is refused the same way and leaves it at its version.
    const e = await refused(
      client.beta.agents.update(helperId, { version: 1, multiagent: { type: 'coordinator', agents: ['agent_nope'] } }),
    );
    expect(status(e)).toBe(400);
    expect((await client.beta.agents.retrieve(helperId)).version).toBe(1);
  });
});

describe('a coordinator session', () => {
  it('delegates to a roster agent in a thread that shares its sandbox, lists, streams and messages the thread', async () => {
    const s = await client.beta.sessions.create({ agent: coordinatorId, environment_id: envId });
    expect(s.agent.multiagent?.type).toBe('coordinator');
    const roster = s.agent.multiagent?.type === 'coordinator' ? s.agent.multiagent.agents : [];
    expect(roster.map((a) => 'name' in a && a.name)).toEqual(['helper', 'lead']);
    expect(roster[0]).toMatchObject({
      type: 'agent',
      id: helperId,
      version: 1,
      description: 'writes files',
    });

    h.mock.script(threadSession(s.id, 'toolu_d1'), {
      steps: [
        calls(toolUse('toolu_h1', 'bash', { command: 'echo from-the-thread > shared.txt' })),
        text('helper wrote shared.txt'),
      ],
    });
    h.mock.script(s.id, {
      steps: [
        calls(toolUse('toolu_d1', 'delegate', { agent: 'helper', message: 'write shared.txt' })),
        calls(toolUse('toolu_c1', 'bash', { command: 'cat shared.txt' })),
        text('both done'),
      ],
    });
    await sayTo(client, s.id, 'go');
    let events = await eventsUntil(client, s.id, idleCount(1));
    const delegated = resultText(events, useEventOf(events, 'delegate')!)!;
    expect(delegated.isError).toBe(false);
    expect(delegated.text).toMatch(/^thread sthr_[0-9a-f]{32} \(helper\) replied:\n\nhelper wrote shared.txt$/);
    // The coordinator reads what the thread wrote: one sandbox.
    expect(resultText(events, useEventOf(events, 'bash')!)?.text).toContain('from-the-thread');
    // The request the coordinator's model saw offered the two thread tools, the roster named.
    const offered = (h.mock.requests(s.id)[0].body as { tools: { name: string; description: string }[] }).tools;
    expect(offered.map((t) => t.name)).toEqual(expect.arrayContaining(['delegate', 'message_thread']));
    expect(offered.find((t) => t.name === 'delegate')?.description).toContain('helper (writes files); lead');

    const threads = (await client.beta.sessions.threads.list(s.id)).data;
    expect(threads).toHaveLength(2);
    const [child, primary] = threads;
    expect(primary).toMatchObject({ parent_thread_id: null, session_id: s.id, agent: { id: coordinatorId } });
    expect(child).toMatchObject({
      type: 'session_thread',
      parent_thread_id: primary.id,
      status: 'idle',
      archived_at: null,
      agent: { id: helperId, name: 'helper', version: 1 },
    });
    expect(await client.beta.sessions.threads.retrieve(child.id, { session_id: s.id })).toMatchObject({ id: child.id });
    // Its usage is its two model calls', as its reply reported it.
    const own0 = h.mock.requests(threadSession(s.id, 'toolu_d1'));
    expect(own0).toHaveLength(2);
    expect(child.usage?.output_tokens).toBeGreaterThan(0);
    expect(primary.usage).toBeNull();
    expect((await client.beta.sessions.threads.list(s.id, { statuses: ['idle'] })).data.map((t) => t.id)).toEqual([
      child.id,
      primary.id,
    ]);
    expect((await client.beta.sessions.threads.list(s.id, { statuses: ['running'] })).data).toEqual([]);

    // Interleaved in the session's log: created, the message out, running, the reply back, idle.
    const threadTypes = types(events).filter((t) => t.includes('thread'));
    expect(threadTypes).toEqual([
      'session.thread_created',
      'agent.thread_message_sent',
      'session.thread_status_running',
      'agent.thread_message_received',
      'session.thread_status_idle',
    ]);
    for (const e of events.filter((x) => x.type.startsWith('session.thread_')))
      expect(e).toMatchObject({ session_thread_id: child.id, agent_name: 'helper' });
    expect(events.find((e) => e.type === 'agent.thread_message_received')).toMatchObject({
      from_session_thread_id: child.id,
      from_agent_name: 'helper',
      content: [{ type: 'text', text: 'helper wrote shared.txt' }],
    });

    // The thread's own log: the coordinator's message received, its work, its reply sent.
    const own = await threadEvents(s.id, child.id);
    expect(own[0]).toMatchObject({
      type: 'agent.thread_message_received',
      from_session_thread_id: primary.id,
      content: [{ type: 'text', text: 'write shared.txt' }],
    });
    expect(types(own)).toEqual(expect.arrayContaining(['agent.tool_use', 'agent.tool_result', 'agent.message']));
    expect(own.find((e) => e.type === 'agent.thread_message_sent')).toMatchObject({
      to_session_thread_id: primary.id,
    });
    // The primary thread's events are the session's.
    expect((await threadEvents(s.id, primary.id)).map((e) => e.id)).toEqual(events.map((e) => e.id));

    // A follow-up through message_thread, while the thread's stream is open: the thread remembers its first turn.
    const stream = await client.beta.sessions.threads.events.stream(child.id, { session_id: s.id });
    const streamed: ApiEvent[] = [];
    const reading = (async () => {
      for await (const e of stream) {
        streamed.push(e as ApiEvent);
        if (e.type === 'agent.thread_message_sent') break;
      }
    })();
    h.mock.script(threadSession(s.id, 'toolu_d1'), { steps: [text('still here')] });
    h.mock.script(s.id, {
      steps: [
        calls(toolUse('toolu_m1', 'message_thread', { thread_id: child.id, message: 'anything else?' })),
        text('ok'),
      ],
    });
    await sayTo(client, s.id, 'ask again');
    events = await eventsUntil(client, s.id, idleCount(2));
    expect(resultText(events, useEventOf(events, 'message_thread')!)).toEqual({
      text: `thread ${child.id} (helper) replied:\n\nstill here`,
      isError: false,
    });
    await reading;
    expect(types(streamed)).toEqual(
      expect.arrayContaining(['agent.thread_message_received', 'agent.message', 'agent.thread_message_sent']),
    );
    // The thread's second model call saw its first turn.
    const second = h.mock.requests(threadSession(s.id, 'toolu_d1'))[2].body;
    expect(JSON.stringify(second.messages)).toContain('write shared.txt');

    // Archived: terminated, and a message to it is the model's error; the session goes on.
    const archivedThread = await client.beta.sessions.threads.archive(child.id, { session_id: s.id });
    expect(archivedThread).toMatchObject({ status: 'terminated', archived_at: expect.any(String) });
    expect(status(await refused(client.beta.sessions.threads.archive(primary.id, { session_id: s.id })))).toBe(400);
    h.mock.script(s.id, {
      steps: [calls(toolUse('toolu_m2', 'message_thread', { thread_id: child.id, message: 'hello?' })), text('fine')],
    });
    await sayTo(client, s.id, 'once more');
    events = await eventsUntil(client, s.id, idleCount(3));
    expect(resultText(events, useEventOf(events, 'message_thread', 1)!)).toEqual({
      text: `thread ${child.id} is archived`,
      isError: true,
    });
    expect(types(events).filter((t) => t === 'session.thread_status_terminated')).toHaveLength(1);
    await client.beta.sessions.archive(s.id);
  });

  it('interrupts one thread, and survives a thread whose model call fails', async () => {
    const s = await client.beta.sessions.create({ agent: coordinatorId, environment_id: envId });
    const hold = `threads-hold-${process.pid}`;
    gates.push(hold);
    h.mock.script(threadSession(s.id, 'toolu_slow'), { steps: [{ gate: hold, ...text('late') }] });
    h.mock.script(threadSession(s.id, 'toolu_bad'), { steps: [{ status: 400, message: 'refused by the model' }] });
    h.mock.script(s.id, {
      steps: [
        calls(
          toolUse('toolu_slow', 'delegate', { agent: 'helper', message: 'take your time' }),
          toolUse('toolu_bad', 'delegate', { agent: 'lead', message: 'this one fails' }),
        ),
        text('coordinator carries on'),
      ],
    });
    await sayTo(client, s.id, 'two threads');
    const running = await eventsUntil(client, s.id, (ev) =>
      ev.some((e) => e.type === 'session.thread_status_terminated'),
    );
    const slow = running.find(
      (e) => e.type === 'session.thread_created' && (e as { agent_name: string }).agent_name === 'helper',
    ) as { session_thread_id: string };
    await client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.interrupt', session_thread_id: slow.session_thread_id }],
    });
    const events = await eventsUntil(client, s.id, idleCount(1));
    const failed = resultText(events, useEventOf(events, 'delegate', 1)!)!;
    expect(failed.isError).toBe(true);
    expect(failed.text).toMatch(/\(lead\): the sub-agent stopped with an error/);
    const interrupted = resultText(events, useEventOf(events, 'delegate', 0)!)!;
    expect(interrupted).toMatchObject({ isError: true, text: expect.stringMatching(/interrupted/) });
    // The failed thread went idle (retries exhausted) and terminated; the interrupted one is idle and stays.
    const threads = (await client.beta.sessions.threads.list(s.id)).data;
    expect(threads.map((t) => ['name' in t.agent && t.agent.name, t.status])).toEqual([
      ['lead', 'terminated'],
      ['helper', 'idle'],
      ['lead', 'idle'],
    ]);
    expect(
      events
        .filter((e) => e.type === 'session.thread_status_idle')
        .map((e) => (e as { stop_reason: { type: string } }).stop_reason.type)
        .sort(),
    ).toEqual(['end_turn', 'retries_exhausted']);
    expect(events.filter((e) => e.type === 'session.error')).toEqual([]);
    // An unknown thread is a 400 naming the field, and sends nothing.
    const e = await refused(
      client.beta.sessions.events.send(s.id, { events: [{ type: 'user.interrupt', session_thread_id: 'sthr_nope' }] }),
    );
    expect(status(e)).toBe(400);
    expect(messageOf(e)).toMatch(/events.0.session_thread_id: no thread sthr_nope/);
    // The session is usable: the next message runs a turn.
    h.mock.script(s.id, { steps: [text('still usable')] });
    await sayTo(client, s.id, 'are you there?');
    const after = await eventsUntil(client, s.id, idleCount(2));
    expect(after.filter((x) => x.type === 'agent.message').pop()).toMatchObject({
      content: [{ type: 'text', text: 'still usable' }],
    });
    h.mock.release(hold);
    await client.beta.sessions.archive(s.id);
    // Archiving the session ended its threads.
    const ended = await eventsUntil(client, s.id, (ev) => ev.some((x) => x.type === 'session.status_terminated'));
    expect(ended.filter((x) => x.type === 'session.thread_status_terminated')).toHaveLength(2);
  });

  it("cross-posts a thread's calls that wait for the client onto the primary stream, and routes the answers back", async () => {
    const careful = (
      await client.beta.agents.create({
        name: 'careful',
        model: 'claude-sonnet-5-5',
        tools: [
          { type: 'agent_toolset_20260401', configs: [{ name: 'bash', permission_policy: { type: 'always_ask' } }] },
          {
            type: 'custom',
            name: 'ask_owner',
            description: 'Ask the owner',
            input_schema: { type: 'object', properties: { question: { type: 'string' } } },
          },
        ],
      })
    ).id;
    const lead = (
      await client.beta.agents.create({
        name: 'asker',
        model: 'claude-sonnet-5-5',
        multiagent: { type: 'coordinator', agents: [careful] },
      })
    ).id;
    const s = await client.beta.sessions.create({ agent: lead, environment_id: envId });
    h.mock.script(threadSession(s.id, 'toolu_ask'), {
      steps: [
        calls(toolUse('toolu_b1', 'bash', { command: 'echo approved-run' })),
        calls(toolUse('toolu_q1', 'ask_owner', { question: 'which colour?' })),
        text('ran it; the owner said teal'),
      ],
    });
    h.mock.script(s.id, {
      steps: [calls(toolUse('toolu_ask', 'delegate', { agent: 'careful', message: 'run it' })), text('done')],
    });
    // The client follows only the primary stream, and answers what it sees there.
    const stream = await client.beta.sessions.events.stream(s.id);
    const seen: ApiEvent[] = [];
    const echoes: unknown[] = [];
    // What a client polling the session reads while a thread's call waits for it.
    const polled: string[] = [];
    const reading = (async () => {
      for await (const raw of stream) {
        const e = raw as ApiEvent & { session_thread_id?: string | null };
        seen.push(e);
        if ((e.type === 'agent.tool_use' || e.type === 'agent.custom_tool_use') && e.session_thread_id)
          polled.push((await client.beta.sessions.retrieve(s.id)).status);
        if (e.type === 'agent.tool_use' && e.session_thread_id)
          echoes.push(
            ...((
              await client.beta.sessions.events.send(s.id, {
                events: [{ type: 'user.tool_confirmation', tool_use_id: e.id, result: 'allow' }],
              })
            ).data ?? []),
          );
        if (e.type === 'agent.custom_tool_use' && e.session_thread_id)
          echoes.push(
            ...((
              await client.beta.sessions.events.send(s.id, {
                events: [
                  {
                    type: 'user.custom_tool_result',
                    custom_tool_use_id: e.id,
                    content: [{ type: 'text', text: 'teal' }],
                  },
                ],
              })
            ).data ?? []),
          );
        if (e.type === 'session.status_idle' && e.stop_reason.type === 'end_turn') break;
      }
    })();
    await sayTo(client, s.id, 'go');
    await reading;
    expect(polled).toEqual(['idle', 'idle']);

    const created = seen.find((e) => e.type === 'session.thread_created') as { session_thread_id: string };
    const threadId = created.session_thread_id;
    const use = seen.find((e) => e.type === 'agent.tool_use' && e.name === 'bash') as
      Anthropic.Beta.Sessions.BetaManagedAgentsAgentToolUseEvent | undefined;
    expect(use).toMatchObject({
      name: 'bash',
      input: { command: 'echo approved-run' },
      session_thread_id: threadId,
      evaluated_permission: 'ask',
      evaluation: { type: 'always_ask' },
    });
    const custom = seen.find((e) => e.type === 'agent.custom_tool_use') as
      Anthropic.Beta.Sessions.BetaManagedAgentsAgentCustomToolUseEvent | undefined;
    expect(custom).toMatchObject({
      name: 'ask_owner',
      input: { question: 'which colour?' },
      session_thread_id: threadId,
    });
    // The primary thread idled with requires_action naming each waiting call, and ran again once it was answered.
    const after = (id: string) => seen.slice(seen.findIndex((e) => e.id === id) + 1);
    for (const waiting of [use!, custom!]) {
      expect(after(waiting.id)[0]).toMatchObject({
        type: 'session.status_idle',
        stop_reason: { type: 'requires_action', event_ids: [waiting.id] },
      });
      expect(
        after(waiting.id)
          .slice(1)
          .map((e) => e.type),
      ).toContain('session.status_running');
    }
    // Each answer went to the thread, its echo naming it; the coordinator got the thread's reply.
    expect(echoes).toEqual([
      expect.objectContaining({ type: 'user.tool_confirmation', tool_use_id: use!.id, session_thread_id: threadId }),
      expect.objectContaining({
        type: 'user.custom_tool_result',
        custom_tool_use_id: custom!.id,
        session_thread_id: threadId,
      }),
    ]);
    const events = await eventsUntil(client, s.id, (ev) =>
      ev.some((e) => e.type === 'session.status_idle' && e.stop_reason.type === 'end_turn'),
    );
    expect(resultText(events, useEventOf(events, 'delegate')!)).toEqual({
      text: `thread ${threadId} (careful) replied:\n\nran it; the owner said teal`,
      isError: false,
    });
    // The copies are informational: posted once each, never run or answered on the primary thread.
    expect(events.filter((e) => e.id === use!.id)).toHaveLength(1);
    expect(events.filter((e) => e.id === custom!.id)).toHaveLength(1);
    expect(types(events).filter((t) => t === 'agent.tool_result' || t.startsWith('user.tool'))).toEqual([
      'agent.tool_result',
    ]);
    expect(h.mock.requests(threadSession(s.id, 'toolu_ask'))).toHaveLength(3);
    // The thread's own events show the same calls, without session_thread_id, and their results.
    const own = await threadEvents(s.id, threadId);
    const ownUse = own.find((e) => e.id === use!.id) as { session_thread_id?: string | null };
    const ownCustom = own.find((e) => e.id === custom!.id) as { session_thread_id?: string | null };
    expect(ownUse).toMatchObject({ type: 'agent.tool_use', name: 'bash', evaluated_permission: 'ask' });
    expect(ownUse.session_thread_id ?? null).toBeNull();
    expect(ownCustom).toMatchObject({ type: 'agent.custom_tool_use', name: 'ask_owner' });
    expect(ownCustom.session_thread_id ?? null).toBeNull();
    expect(resultText(own, use!.id)?.text).toContain('approved-run');
    expect(own.filter((e) => e.type === 'user.tool_confirmation')).toHaveLength(1);
    expect(own.find((e) => e.type === 'user.custom_tool_result')).toMatchObject({
      custom_tool_use_id: custom!.id,
      content: [{ type: 'text', text: 'teal' }],
    });
    // An answer sent again is refused and stores nothing.
    const again = await refused(
      client.beta.sessions.events.send(s.id, {
        events: [{ type: 'user.tool_confirmation', tool_use_id: use!.id, result: 'allow' }],
      }),
    );
    expect(status(again)).toBe(400);
    expect((await threadEvents(s.id, threadId)).length).toBe(own.length);
    await client.beta.sessions.archive(s.id);
  });
});
