// The projection of the session log onto the API's events: a turn's shape, tool calls by kind, confirmations and
// custom tools by event id, errors, interrupts and the end; ids stable and unique however the log is paged.
import fc from 'fast-check';
import { SessionProjector, eventId, projectLog } from '../../src/api/sessions/projection';
import type { SessionEvent } from '../../src/session/events';

const T = '2026-12-01T10:00:00.000Z';
const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 2, cacheCreationInputTokens: 1 };
type Draft = SessionEvent extends infer E ? (E extends SessionEvent ? Omit<E, 'seq' | 'time'> : never) : never;
const log = (...events: Draft[]): SessionEvent[] => events.map((e, seq) => ({ ...e, seq, time: T }) as SessionEvent);
const started = (clientTools: string[] = []): Draft => ({
  type: 'session_started',
  agent: { name: 'a', model: 'm', clientTools: clientTools.map((name) => ({ name })) },
});
const types = (events: { type: string }[]) => events.map((e) => e.type);

it('projects a turn from session.status_running to session.status_idle with spans and usage', () => {
  const out = projectLog(
    'ses-1',
    log(
      started(),
      { type: 'user_message', text: 'hi' },
      { type: 'assistant_message', content: [{ type: 'text', text: 'hello' }], stopReason: 'end_turn', usage },
    ),
  );
  expect(types(out)).toEqual([
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ]);
  expect(out[0]).toMatchObject({ content: [{ type: 'text', text: 'hi' }], processed_at: T });
  expect(out[3]).toMatchObject({ content: [{ type: 'text', text: 'hello' }] });
  expect(out[4]).toMatchObject({
    model_request_start_id: out[2].id,
    is_error: false,
    model_usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: 1 },
  });
  expect(out[5]).toMatchObject({
    type: 'session.usage',
    usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2 },
    budget: null,
  });
  expect(out[6]).toMatchObject({ stop_reason: { type: 'end_turn' }, stop_details: null });
  expect(out.every((e) => /^sevt_[A-Za-z0-9_-]{26}$/.test(e.id))).toBe(true);
});

it('reports the cumulative usage after each model request, cache writes split by TTL, whatever pages the log comes in', () => {
  const events = log(
    started(),
    { type: 'user_message', text: 'go' },
    {
      type: 'assistant_message',
      content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: {} }],
      stopReason: 'tool_use',
      usage,
    },
    { type: 'tool_use', id: 'toolu_1', name: 'bash', input: {} },
    { type: 'tool_result', toolUseId: 'toolu_1', output: 'ok', isError: false },
    {
      type: 'assistant_message',
      content: [{ type: 'text', text: 'done' }],
      stopReason: 'end_turn',
      usage: {
        inputTokens: 100,
        outputTokens: 7,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 3,
        cacheCreation1hInputTokens: 2,
      },
    },
  );
  const snapshots = projectLog('ses-u', events).filter((e) => e.type === 'session.usage');
  expect(snapshots.map((e) => (e as { usage: unknown }).usage)).toEqual([
    {
      input_tokens: 10,
      output_tokens: 5,
      cache_read_input_tokens: 2,
      cache_creation: { ephemeral_5m_input_tokens: 1, ephemeral_1h_input_tokens: 0 },
    },
    {
      input_tokens: 110,
      output_tokens: 12,
      cache_read_input_tokens: 2,
      cache_creation: { ephemeral_5m_input_tokens: 2, ephemeral_1h_input_tokens: 2 },
    },
  ]);
  const paged = new SessionProjector('ses-u');
  const inPages = [...paged.push(events.slice(0, 3)), ...paged.push(events.slice(3))];
  expect(inPages).toEqual(projectLog('ses-u', events));
});

it('signals each thinking block of a reply with agent.thinking before its message, and keeps the older parts ids', () => {
  const out = projectLog(
    'ses-t',
    log(
      started(),
      { type: 'user_message', text: 'think' },
      {
        type: 'assistant_message',
        content: [
          { type: 'thinking', thinking: 'hmm', signature: 's' },
          { type: 'redacted_thinking', data: 'x' },
          { type: 'text', text: 'yes' },
        ],
        stopReason: 'end_turn',
        usage,
      },
    ),
  );
  expect(types(out)).toEqual([
    'user.message',
    'session.status_running',
    'span.model_request_start',
    'agent.thinking',
    'agent.thinking',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ]);
  // The thinking itself is not carried, as hosted: the event is a progress signal.
  expect(Object.keys(out[3]).sort()).toEqual(['id', 'processed_at', 'type']);
  expect(out.find((e) => e.type === 'agent.message')!.id).toBe(eventId('ses-t', 2, 1));
  expect(out.find((e) => e.type === 'span.model_request_end')!.id).toBe(eventId('ses-t', 2, 2));
  expect(new Set(out.map((e) => e.id)).size).toBe(out.length);
});

it('shows a sandbox provisioned again during a turn as session.status_rescheduled until it is ready, and a pause as platform.sandbox_paused', () => {
  const use = (id: string): Draft[] => [
    {
      type: 'assistant_message',
      content: [{ type: 'tool_use', id, name: 'bash', input: {} }],
      stopReason: 'tool_use',
      usage,
    },
    { type: 'tool_use', id, name: 'bash', input: {} },
  ];
  const provisioned: Draft = {
    type: 'sandbox_provisioned',
    name: 'main',
    sandboxId: 'sb2',
    host: 'h2',
    ms: 900,
    resumed: false,
    loosened: [],
  };
  const out = projectLog(
    'ses-m',
    log(
      started(),
      { type: 'sandbox_paused', name: 'main', sandboxId: 'sb1', snapshotSeq: 3 },
      { type: 'user_message', text: 'go on' },
      ...use('toolu_1'),
      { type: 'sandbox_rescheduling', name: 'main', reason: 'paused' },
      provisioned,
      {
        type: 'workspace_restored',
        name: 'main',
        sandboxId: 'sb2',
        host: 'h2',
        snapshotSeq: 3,
        takenAt: T,
        files: 2,
        sizeBytes: 10,
        ms: 400,
      },
      { type: 'tool_result', toolUseId: 'toolu_1', output: 'ok', isError: false },
      ...use('toolu_2'),
      // A provision that fails: the call's error result ends the rescheduling.
      { type: 'sandbox_rescheduling', name: 'main', reason: 'lost' },
      {
        type: 'tool_result',
        toolUseId: 'toolu_2',
        output: 'no sandbox',
        isError: true,
        error: { kind: 'infra', message: 'no sandbox' },
      },
      { type: 'assistant_message', content: [{ type: 'text', text: 'done' }], stopReason: 'end_turn', usage },
    ),
  );
  const shown = out.filter((e) => e.type.startsWith('session.status') || e.type.startsWith('platform.'));
  expect(types(shown)).toEqual([
    'platform.sandbox_paused',
    'session.status_running',
    'session.status_rescheduled',
    'platform.sandbox_provisioned',
    'session.status_running',
    'platform.workspace_restored',
    'session.status_rescheduled',
    'session.status_running',
    'session.status_idle',
  ]);
  expect(shown[0]).toEqual({
    type: 'platform.sandbox_paused',
    id: eventId('ses-m', 1),
    processed_at: T,
    sandbox_name: 'main',
    sandbox_id: 'sb1',
    snapshot_seq: 3,
  });
  expect(new Set(out.map((e) => e.id)).size).toBe(out.length);
  // Outside a turn (a file copy provisioning again), the status does not change.
  const idle = projectLog(
    'ses-i',
    log(started(), { type: 'sandbox_rescheduling', name: 'main', reason: 'lost' }, provisioned),
  );
  expect(types(idle)).toEqual(['platform.sandbox_provisioned']);
});

it('shows a logged model retry as a retrying session.error and session.status_rescheduled, and its start as session.status_running', () => {
  const retryAt = '2026-12-01T10:00:05.000Z';
  const out = projectLog(
    'ses-r',
    log(
      started(),
      { type: 'user_message', text: 'hi' },
      {
        type: 'model_retry_scheduled',
        attempt: 1,
        error: { type: 'ModelError.RateLimited', message: 'model API returned 429: slow down' },
        retryAt,
      },
      { type: 'model_retry_started', attempt: 2 },
      {
        type: 'model_retry_scheduled',
        attempt: 2,
        error: { type: 'ModelError.Stream', message: 'model API stream error' },
        retryAt,
      },
      { type: 'model_retry_started', attempt: 3 },
      { type: 'assistant_message', content: [{ type: 'text', text: 'hello' }], stopReason: 'end_turn', usage },
    ),
  );
  expect(types(out)).toEqual([
    'user.message',
    'session.status_running',
    'session.error',
    'session.status_rescheduled',
    'session.status_running',
    'session.error',
    'session.status_rescheduled',
    'session.status_running',
    'span.model_request_start',
    'agent.message',
    'span.model_request_end',
    'session.usage',
    'session.status_idle',
  ]);
  expect(out[2]).toEqual({
    type: 'session.error',
    id: eventId('ses-r', 2, 0),
    processed_at: T,
    error: {
      type: 'model_rate_limited_error',
      message: 'model API returned 429: slow down',
      retry_status: { type: 'retrying' },
    },
  });
  expect(out[3]).toEqual({ type: 'session.status_rescheduled', id: eventId('ses-r', 2, 1), processed_at: T });
  expect(out[4]).toEqual({ type: 'session.status_running', id: eventId('ses-r', 3, 0), processed_at: T });
  expect(out[5]).toMatchObject({ error: { type: 'model_request_failed_error', retry_status: { type: 'retrying' } } });
  expect(new Set(out.map((e) => e.id)).size).toBe(out.length);
});

it('shows a logged session update as session.updated with only what changed, and an interrupt between turns alone', () => {
  const out = projectLog(
    'ses-up',
    log(
      started(),
      { type: 'session_updated', title: 'new title' },
      { type: 'session_updated', metadata: { a: '1' } },
      { type: 'interrupted', reason: 'user.interrupt' },
    ),
  );
  expect(out).toEqual([
    { type: 'session.updated', id: eventId('ses-up', 1), processed_at: T, title: 'new title' },
    { type: 'session.updated', id: eventId('ses-up', 2), processed_at: T, metadata: { a: '1' } },
    { type: 'user.interrupt', id: eventId('ses-up', 3), processed_at: T },
  ]);
});

it('tells tool, MCP and custom calls apart, and answers results by the event id of their call', () => {
  const out = projectLog(
    'ses-2',
    log(
      started(['ask_user']),
      { type: 'user_message', text: 'go' },
      {
        type: 'assistant_message',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: {} }],
        stopReason: 'tool_use',
        usage,
      },
      { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
      { type: 'tool_use', id: 'toolu_2', name: 'mcp__tracker__list_issues', input: { q: 'x' } },
      { type: 'tool_result', toolUseId: 'toolu_1', output: 'a\n[exit 0]', isError: false },
      { type: 'tool_result', toolUseId: 'toolu_2', output: '', isError: true },
      { type: 'tool_use', id: 'toolu_3', name: 'ask_user', input: { q: 'colour?' } },
      { type: 'tool_result', toolUseId: 'toolu_3', output: 'teal', isError: false },
      { type: 'assistant_message', content: [{ type: 'text', text: 'done' }], stopReason: 'end_turn', usage },
    ),
  );
  const by = (t: string) => out.filter((e) => e.type === t) as unknown as Record<string, unknown>[];
  const [bash] = by('agent.tool_use');
  const [mcp] = by('agent.mcp_tool_use');
  const [custom] = by('agent.custom_tool_use');
  expect(bash).toMatchObject({ name: 'bash', input: { command: 'ls' } });
  expect(mcp).toMatchObject({ mcp_server_name: 'tracker', name: 'list_issues', input: { q: 'x' } });
  expect(custom).toMatchObject({ name: 'ask_user', input: { q: 'colour?' } });
  expect(by('agent.tool_result')[0]).toMatchObject({
    tool_use_id: bash.id,
    content: [{ type: 'text', text: 'a\n[exit 0]' }],
    is_error: false,
  });
  expect(by('agent.mcp_tool_result')[0]).toMatchObject({
    mcp_tool_use_id: mcp.id,
    content: [{ type: 'text', text: '(no output)' }],
    is_error: true,
  });
  expect(by('user.custom_tool_result')[0]).toMatchObject({
    custom_tool_use_id: custom.id,
    content: [{ type: 'text', text: 'teal' }],
  });
  // The custom call waits on the application; its result lets the turn run on.
  const idles = by('session.status_idle');
  expect(idles.map((e) => e.stop_reason)).toEqual([
    { type: 'requires_action', event_ids: [custom.id] },
    { type: 'end_turn' },
  ]);
  expect(types(out).filter((t) => t.startsWith('session.status'))).toEqual([
    'session.status_running',
    'session.status_idle',
    'session.status_running',
    'session.status_idle',
  ]);
});

it('waits on an always_ask call by its event id, and echoes the confirmation with the deny message', () => {
  const p = new SessionProjector('ses-3');
  const out = p.push(
    log(
      started(),
      { type: 'user_message', text: 'push' },
      { type: 'assistant_message', content: [], stopReason: 'tool_use', usage },
      { type: 'tool_use', id: 'toolu_9', name: 'bash', input: { command: 'git push' } },
      { type: 'approval_requested', toolUseId: 'toolu_9', policy: 'bash: always_ask' },
      { type: 'approval_resolved', toolUseId: 'toolu_9', allow: false, reason: 'not yet', by: 'user' },
      {
        type: 'tool_result',
        toolUseId: 'toolu_9',
        output: 'denied: not yet',
        isError: true,
        error: { kind: 'denied', message: 'not yet' },
      },
    ),
  );
  const use = out.find((e) => e.type === 'agent.tool_use')!;
  expect(p.toolUseIdOf(use.id)).toBe('toolu_9');
  expect(out.find((e) => e.type === 'session.status_idle')).toMatchObject({
    stop_reason: { type: 'requires_action', event_ids: [use.id] },
  });
  expect(out.find((e) => e.type === 'user.tool_confirmation')).toMatchObject({
    tool_use_id: use.id,
    result: 'deny',
    deny_message: 'not yet',
  });
  expect(types(out).slice(-3)).toEqual(['user.tool_confirmation', 'session.status_running', 'agent.tool_result']);
});

it("shows a thread's waiting calls as copies of the thread's events with session_thread_id, and requires_action until each settles", () => {
  const p = new SessionProjector('ses-c');
  const thread = { threadId: 'sthr_t', sessionId: 'ses-c.toolu_d' };
  const out = p.push(
    log(
      started(),
      { type: 'user_message', text: 'go' },
      { type: 'assistant_message', content: [], stopReason: 'tool_use', usage },
      { type: 'tool_use', id: 'toolu_d', name: 'delegate', input: { agent: 'x', message: 'y' } },
      {
        type: 'thread_tool_call',
        ...thread,
        toolUseId: 'toolu_a',
        state: 'waiting',
        useSeq: 7,
        name: 'bash',
        input: { command: 'rm -rf /' },
        waitsFor: 'confirmation',
        policy: 'bash: auto (destructive)',
      },
      {
        type: 'thread_tool_call',
        ...thread,
        toolUseId: 'toolu_m',
        state: 'waiting',
        useSeq: 9,
        name: 'mcp__tracker__close',
        input: {},
        waitsFor: 'confirmation',
        policy: 'mcp__tracker__close: always_ask',
      },
      { type: 'thread_tool_call', ...thread, toolUseId: 'toolu_a', state: 'settled' },
      { type: 'thread_tool_call', ...thread, toolUseId: 'toolu_a', state: 'settled' },
      { type: 'thread_tool_call', ...thread, toolUseId: 'toolu_m', state: 'settled' },
    ),
  );
  const [a, m] = [eventId('ses-c.toolu_d', 7), eventId('ses-c.toolu_d', 9)];
  expect(out.find((e) => e.id === a)).toMatchObject({
    type: 'agent.tool_use',
    name: 'bash',
    input: { command: 'rm -rf /' },
    session_thread_id: 'sthr_t',
    evaluated_permission: 'ask',
    evaluation: { type: 'auto', evaluated_permission: { type: 'ask', reason_code: 'destructive' } },
  });
  expect(out.find((e) => e.id === m)).toMatchObject({
    type: 'agent.mcp_tool_use',
    mcp_server_name: 'tracker',
    name: 'close',
    session_thread_id: 'sthr_t',
    evaluation: { type: 'always_ask' },
  });
  // The copies are the thread's calls: the coordinator's projection does not take their ids as its own.
  expect(p.toolUseIdOf(a)).toBeUndefined();
  const idles = out.filter((e) => e.type === 'session.status_idle') as { stop_reason: { event_ids?: string[] } }[];
  expect(idles.map((e) => e.stop_reason.event_ids)).toEqual([[a], [a, m], [m]]);
  // A repeated settle changes nothing; the last one runs the turn again.
  expect(types(out).slice(-4)).toEqual([
    'agent.mcp_tool_use',
    'session.status_idle',
    'session.status_idle',
    'session.status_running',
  ]);
});

it('ends a failed turn with retries_exhausted, an interrupted one with end_turn, and the session with terminated', () => {
  const out = projectLog(
    'ses-4',
    log(
      started(),
      { type: 'user_message', text: 'a' },
      { type: 'error', kind: 'model', message: 'overloaded past its retry budget' },
      { type: 'user_message', text: 'b' },
      { type: 'interrupted', reason: 'user' },
      { type: 'user_message', text: 'nudge', source: 'harness' },
      { type: 'context_compacted', throughSeq: 3, summary: 'secret summary', tokensBefore: 100, tokensAfter: 10 },
      { type: 'session_ended', reason: 'done' },
    ),
  );
  expect(types(out)).toEqual([
    'user.message',
    'session.status_running',
    'session.error',
    'session.status_idle',
    'user.message',
    'session.status_running',
    'user.interrupt',
    'session.status_idle',
    'agent.thread_context_compacted',
    'session.status_terminated',
  ]);
  expect(out[2]).toMatchObject({
    error: {
      type: 'model_request_failed_error',
      message: 'overloaded past its retry budget',
      retry_status: { type: 'exhausted' },
    },
  });
  expect(out[3]).toMatchObject({ stop_reason: { type: 'retries_exhausted' } });
  expect(out[7]).toMatchObject({ stop_reason: { type: 'end_turn' } });
  expect(JSON.stringify(out)).not.toContain('secret summary');
});

it('counts the list cost and the budget in each session.usage, and ends a turn stopped at the budget with budget_reached', () => {
  const budget = { amount: 3, currency: 'USD' as const };
  const limit = (amount: string) => ({ type: 'limit', max_list_cost: { amount, currency: 'USD' } });
  const call = (stopReason: string, costNanoUsd: number): Draft => ({
    type: 'assistant_message',
    content: stopReason === 'tool_use' ? [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: {} }] : [],
    stopReason,
    usage,
    costNanoUsd,
  });
  const out = projectLog(
    'ses-b',
    log(
      { type: 'session_started', agent: { name: 'a', model: 'm' }, budget },
      { type: 'user_message', text: 'go' },
      call('tool_use', 12_000_000),
      { type: 'tool_result', toolUseId: 'toolu_1', output: 'ok', isError: false },
      {
        type: 'subagent_finished',
        sessionId: 'ses-b.child',
        toolUseId: 'toolu_9',
        isError: false,
        costNanoUsd: 20_000_000,
      },
      call('tool_use', 12_000_000),
      { type: 'budget_reached', costNanoUsd: 44_000_000, budget },
      { type: 'user_message', text: 'more' },
      { type: 'budget_reached', costNanoUsd: 44_000_000, budget },
      { type: 'session_updated', budget: { amount: 10, currency: 'USD' } },
      { type: 'user_message', text: 'go on' },
      call('end_turn', 12_000_000),
      { type: 'session_updated', budget: null },
    ),
  );
  const usages = out.filter((e) => e.type === 'session.usage') as { usage: { list_cost?: unknown }; budget: unknown }[];
  expect(usages.map((u) => [u.usage.list_cost, u.budget])).toEqual([
    [{ amount: '1', currency: 'USD' }, limit('3')],
    // The child's 2 cents count once it reports.
    [{ amount: '4', currency: 'USD' }, limit('3')],
    [{ amount: '6', currency: 'USD' }, limit('10')],
  ]);
  const idle = out.filter((e) => e.type === 'session.status_idle') as { stop_reason: { type: string } }[];
  expect(idle.map((e) => e.stop_reason.type)).toEqual(['budget_reached', 'budget_reached', 'end_turn']);
  expect(out.filter((e) => e.type === 'session.updated')).toEqual([
    { type: 'session.updated', id: eventId('ses-b', 9), processed_at: T, budget: limit('10') },
    { type: 'session.updated', id: eventId('ses-b', 12), processed_at: T, budget: null },
  ]);
  // A log that counts no cost reports none.
  const plain = projectLog('ses-p', log(started(), { type: 'user_message', text: 'hi' }, call('end_turn', 0)));
  const { costNanoUsd: _c, ...uncounted } = call('end_turn', 0) as Extract<Draft, { type: 'assistant_message' }>;
  const free = projectLog('ses-f', log(started(), { type: 'user_message', text: 'hi' }, uncounted));
  expect(plain.find((e) => e.type === 'session.usage')).toMatchObject({
    usage: { list_cost: { amount: '0' } },
    budget: null,
  });
  expect((free.find((e) => e.type === 'session.usage') as { usage: object }).usage).not.toHaveProperty('list_cost');
});

it("shows a sandbox's provisioning and loss as platform.* events, inside the turn and without its host", () => {
  const out = projectLog(
    'ses-6',
    log(
      started(),
      { type: 'user_message', text: 'run' },
      { type: 'assistant_message', content: [], stopReason: 'tool_use', usage },
      { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } },
      {
        type: 'sandbox_provisioned',
        name: 'main',
        sandboxId: 'c1',
        host: 'hands-7',
        ms: 840,
        resumed: false,
        runtime: 'runc',
        loosened: ['network: bridge'],
      },
      { type: 'tool_result', toolUseId: 'toolu_1', output: 'ok', isError: false },
      { type: 'assistant_message', content: [], stopReason: 'tool_use', usage },
      { type: 'tool_use', id: 'toolu_2', name: 'bash', input: { command: 'ls' } },
      { type: 'sandbox_lost', name: 'main', sandboxId: 'c1', reason: 'container exited (137)' },
      {
        type: 'tool_result',
        toolUseId: 'toolu_2',
        output: 'sandbox main was lost',
        isError: true,
        error: { kind: 'infra', message: 'lost' },
      },
      {
        type: 'sandbox_provisioned',
        name: 'main',
        sandboxId: 'c2',
        host: 'hands-7',
        ms: 200,
        resumed: true,
        loosened: [],
      },
    ),
  );
  const platform = out.filter((e) => e.type.startsWith('platform.'));
  expect(platform).toEqual([
    {
      type: 'platform.sandbox_provisioned',
      id: eventId('ses-6', 4),
      processed_at: T,
      sandbox_name: 'main',
      sandbox_id: 'c1',
      resumed: false,
      duration_ms: 840,
      runtime: 'runc',
      loosened: ['network: bridge'],
    },
    {
      type: 'platform.sandbox_lost',
      id: eventId('ses-6', 8),
      processed_at: T,
      sandbox_name: 'main',
      sandbox_id: 'c1',
      reason: 'container exited (137)',
    },
    {
      type: 'platform.sandbox_provisioned',
      id: eventId('ses-6', 10),
      processed_at: T,
      sandbox_name: 'main',
      sandbox_id: 'c2',
      resumed: true,
      duration_ms: 200,
      runtime: null,
      loosened: [],
    },
  ]);
  // They change no status: the turn keeps running through a lost sandbox.
  expect(types(out).filter((t) => t.startsWith('session.status'))).toEqual(['session.status_running']);
  expect(JSON.stringify(out)).not.toContain('hands-7');
});

it('refuses a log with a gap rather than project it wrong', () => {
  const p = new SessionProjector('ses-5');
  p.push(log(started()));
  expect(() => p.push([{ type: 'user_message', text: 'x', seq: 2, time: T }])).toThrow(/expected seq 1/);
});

const draft: fc.Arbitrary<Draft> = fc.oneof(
  fc.record({ type: fc.constant('user_message' as const), text: fc.string() }),
  fc.record({
    type: fc.constant('assistant_message' as const),
    content: fc.constant([{ type: 'text', text: 'x' }] as { type: string; text: string }[]),
    stopReason: fc.constantFrom('end_turn', 'tool_use'),
    usage: fc.constant(usage),
  }),
  fc.record({
    type: fc.constant('tool_use' as const),
    id: fc.constantFrom('t1', 't2', 't3'),
    name: fc.constantFrom('bash', 'ask', 'mcp__s__t'),
    input: fc.constant({}),
  }),
  fc.record({
    type: fc.constant('tool_result' as const),
    toolUseId: fc.constantFrom('t1', 't2', 't3', 'tx'),
    output: fc.string(),
    isError: fc.boolean(),
  }),
  fc.record({
    type: fc.constant('approval_requested' as const),
    toolUseId: fc.constantFrom('t1', 't2'),
    policy: fc.constant('p'),
  }),
  fc.record({
    type: fc.constant('approval_resolved' as const),
    toolUseId: fc.constantFrom('t1', 't2'),
    allow: fc.boolean(),
    by: fc.constant('user'),
  }),
  fc.record({ type: fc.constant('interrupted' as const), reason: fc.constant('r') }),
  fc.record({
    type: fc.constant('sandbox_provisioned' as const),
    name: fc.constant('main'),
    sandboxId: fc.string(),
    host: fc.constant('h'),
    ms: fc.nat(),
    resumed: fc.boolean(),
    loosened: fc.constant([] as string[]),
  }),
  fc.record({
    type: fc.constant('sandbox_lost' as const),
    name: fc.constant('main'),
    sandboxId: fc.string(),
    reason: fc.string(),
  }),
  fc.record({
    type: fc.constant('error' as const),
    kind: fc.constantFrom('model', 'mcp', 'limit', 'x'),
    message: fc.string(),
  }),
);

it('gives every API event a unique id, the same however the log is paged', () => {
  fc.assert(
    fc.property(
      fc.array(draft, { maxLength: 40 }),
      fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 10 }),
      (drafts, sizes) => {
        const events = log(started(['ask']), ...drafts);
        const whole = projectLog('ses-p', events);
        expect(new Set(whole.map((e) => e.id)).size).toBe(whole.length);
        const paged = new SessionProjector('ses-p');
        const parts = [];
        for (let i = 0, k = 0; i < events.length; k++) {
          const n = sizes[k % sizes.length];
          parts.push(...paged.push(events.slice(i, i + n)));
          i += n;
        }
        expect(parts).toEqual(whole);
      },
    ),
  );
  expect(eventId('a', 1)).not.toBe(eventId('b', 1));
});

describe('the auto policy', () => {
  const autoStarted: Draft = {
    type: 'session_started',
    agent: { name: 'a', model: 'm', policies: { bash: 'auto', 'mcp__tracker__*': 'auto' } },
  };
  const call = (id: string, name: string, input: Record<string, unknown>): Draft[] => [
    {
      type: 'assistant_message',
      content: [{ type: 'tool_use', id, name, input }],
      stopReason: 'tool_use',
      usage,
    },
    { type: 'tool_use', id, name, input },
  ];

  it('shows a call with its judgement, when the judgement comes, and counts the judge in the usage', () => {
    const events = log(
      autoStarted,
      { type: 'user_message', text: 'go' },
      ...call('toolu_1', 'bash', { command: 'ls' }),
      {
        type: 'tool_judged',
        toolUseId: 'toolu_1',
        permission: 'allow',
        reason: 'routine',
        model: 'm',
        usage: { inputTokens: 7, outputTokens: 3, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
      },
      { type: 'tool_result', toolUseId: 'toolu_1', output: 'a', isError: false },
    );
    const out = projectLog('ses-auto', events);
    expect(types(out).slice(-4)).toEqual(['session.usage', 'session.usage', 'agent.tool_use', 'agent.tool_result']);
    const use = out.find((e) => e.type === 'agent.tool_use');
    expect(use).toMatchObject({
      id: eventId('ses-auto', 3),
      evaluated_permission: 'allow',
      evaluation: { type: 'auto', evaluated_permission: { type: 'allow' } },
    });
    expect(out.filter((e) => e.type === 'session.usage').at(-1)).toMatchObject({
      usage: { input_tokens: 17, output_tokens: 8 },
    });
    // Paged anywhere, the same events.
    for (let cut = 1; cut < events.length; cut++) {
      const p = new SessionProjector('ses-auto');
      expect([...p.push(events.slice(0, cut)), ...p.push(events.slice(cut))]).toEqual(out);
    }
  });

  it('waits on a call its judge escalated, by its event id, and an MCP call shows its server policy', () => {
    const out = projectLog(
      'ses-auto2',
      log(
        autoStarted,
        { type: 'user_message', text: 'go' },
        ...call('toolu_1', 'mcp__tracker__delete', { id: 1 }),
        {
          type: 'tool_judged',
          toolUseId: 'toolu_1',
          permission: 'ask',
          reasonCode: 'indeterminate',
          reason: 'the judge did not answer within 60 s',
          model: 'm',
        },
        { type: 'approval_requested', toolUseId: 'toolu_1', policy: 'mcp__tracker__delete: auto (indeterminate)' },
      ),
    );
    const use = out.find((e) => e.type === 'agent.mcp_tool_use')!;
    expect(use).toMatchObject({
      mcp_server_name: 'tracker',
      name: 'delete',
      evaluated_permission: 'ask',
      evaluation: { type: 'auto', evaluated_permission: { type: 'ask', reason_code: 'indeterminate' } },
    });
    expect(out.at(-1)).toMatchObject({
      type: 'session.status_idle',
      stop_reason: { type: 'requires_action', event_ids: [use.id] },
    });
  });

  it('shows a call closed before its judgement without a permission, before its result', () => {
    const out = projectLog(
      'ses-auto3',
      log(
        autoStarted,
        { type: 'user_message', text: 'go' },
        ...call('toolu_1', 'bash', { command: 'ls' }),
        { type: 'tool_result', toolUseId: 'toolu_1', output: 'interrupted', isError: true },
        { type: 'interrupted', reason: 'user' },
      ),
    );
    const at = types(out).indexOf('agent.tool_use');
    expect(types(out)[at + 1]).toBe('agent.tool_result');
    expect(out[at]).not.toHaveProperty('evaluated_permission');
    expect(out[at]).not.toHaveProperty('evaluation');
  });
});
