// The console's fold of API events, fed the API's own projection of a log: calls carry their results and verdicts,
// what waits on the user is known, each event counts once however the stream and the list overlap; and the SSE
// frame splitter, folding of long text, cost and file sizes.
import { projectLog } from '../src/api/sessions/projection';
import type { SessionEvent } from '../src/session/events';
import { Timeline, idleReason, type ApiEvent, type CallItem } from '../src/console/app/timeline';
import { parseFrames } from '../src/console/app/event-stream';
import { FOLD_LINES, bytes, cost, dollars, folded } from '../src/console/app/formatters';

const T = '2026-12-01T10:00:00.000Z';
const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
type Draft = SessionEvent extends infer E ? (E extends SessionEvent ? Omit<E, 'seq' | 'time'> : never) : never;
const api = (...drafts: Draft[]) =>
  projectLog(
    'ses-c',
    drafts.map((e, seq) => ({ ...e, seq, time: T }) as SessionEvent),
  ) as unknown as ApiEvent[];
const started: Draft = {
  type: 'session_started',
  agent: { name: 'a', model: 'm', clientTools: [{ name: 'ask_user' }] },
};
const toolTurn = (id: string, name: string, input: Record<string, unknown>): Draft[] => [
  { type: 'assistant_message', content: [{ type: 'tool_use', id, name, input }], stopReason: 'tool_use', usage },
  { type: 'tool_use', id, name, input },
];

it('folds a turn into messages and calls, each call with its result, verdict and waiting state', () => {
  const events = api(
    started,
    { type: 'user_message', text: 'go' },
    ...toolTurn('toolu_1', 'bash', { command: 'git push' }),
    { type: 'approval_requested', toolUseId: 'toolu_1', policy: 'bash: always_ask' },
  );
  const t = new Timeline();
  t.push(events);
  const call = t.items.find((i): i is CallItem => i.kind === 'call')!;
  expect(call).toMatchObject({ call: 'tool', name: 'bash', input: { command: 'git push' } });
  expect(t.status).toBe('idle');
  expect(t.stopReason).toBe('requires_action');
  expect([...t.waiting]).toEqual([call.id]);
  expect(idleReason(t.stopReason, t.waiting.size)).toBe('waiting for your action on 1 call');

  const more = api(
    started,
    { type: 'user_message', text: 'go' },
    ...toolTurn('toolu_1', 'bash', { command: 'git push' }),
    { type: 'approval_requested', toolUseId: 'toolu_1', policy: 'bash: always_ask' },
    { type: 'approval_resolved', toolUseId: 'toolu_1', allow: false, reason: 'not yet', by: 'user' },
    { type: 'tool_result', toolUseId: 'toolu_1', output: 'denied: not yet', isError: true },
    { type: 'tool_use', id: 'toolu_2', name: 'mcp__tracker__list', input: { q: 'x' } },
    { type: 'tool_result', toolUseId: 'toolu_2', output: 'issue 1', isError: false },
    { type: 'tool_use', id: 'toolu_3', name: 'ask_user', input: { question: 'colour?' } },
  );
  // The list and the stream overlap: what was taken already is not taken again.
  expect(t.push(events)).toBe(false);
  expect(t.push(more)).toBe(true);
  const calls = t.items.filter((i): i is CallItem => i.kind === 'call');
  expect(calls.map((c) => [c.call, c.name, c.server])).toEqual([
    ['tool', 'bash', undefined],
    ['mcp', 'list', 'tracker'],
    ['custom', 'ask_user', undefined],
  ]);
  expect(calls[0]).toMatchObject({
    confirmation: { result: 'deny', message: 'not yet' },
    result: { text: 'denied: not yet', isError: true },
  });
  expect(calls[1].result).toEqual({ text: 'issue 1', isError: false });
  expect([...t.waiting]).toEqual([calls[2].id]);
  expect(t.items.map((i) => i.kind)).toEqual(['user', 'call', 'call', 'call']);
  expect(t.size).toBe(more.length);
});

it('shows errors with their retry status, and markers for an interrupt, a compaction and the end', () => {
  const t = new Timeline();
  t.push(
    api(
      started,
      { type: 'user_message', text: 'a' },
      { type: 'error', kind: 'model', message: 'overloaded past its retry budget' },
      { type: 'user_message', text: 'b' },
      { type: 'interrupted', reason: 'user' },
      { type: 'context_compacted', throughSeq: 3, summary: 's', tokensBefore: 100, tokensAfter: 10 },
      { type: 'session_ended', reason: 'done' },
    ),
  );
  expect(t.items.map((i) => (i.kind === 'marker' ? i.text : i.kind))).toEqual([
    'user',
    'error',
    'user',
    'Interrupted',
    'Context compacted: earlier turns were summarised',
    'Session ended',
  ]);
  expect(t.items[1]).toMatchObject({
    errorType: 'model_request_failed_error',
    message: 'overloaded past its retry budget',
    retry: 'exhausted',
  });
  expect(t.status).toBe('terminated');
  expect(t.waiting.size).toBe(0);
});

it("shows a sandbox's provisioning, loss and replacement as markers between the calls", () => {
  const t = new Timeline();
  t.push(
    api(
      started,
      { type: 'user_message', text: 'run' },
      ...toolTurn('toolu_1', 'bash', { command: 'ls' }),
      {
        type: 'sandbox_provisioned',
        name: 'main',
        sandboxId: 'c1',
        host: 'h',
        ms: 1240,
        resumed: false,
        loosened: ['network: bridge'],
      },
      { type: 'tool_result', toolUseId: 'toolu_1', output: 'ok', isError: false },
      ...toolTurn('toolu_2', 'bash', { command: 'ls' }),
      { type: 'sandbox_lost', name: 'main', sandboxId: 'c1', reason: 'container exited (137)' },
      { type: 'tool_result', toolUseId: 'toolu_2', output: 'sandbox main was lost', isError: true },
      { type: 'sandbox_provisioned', name: 'main', sandboxId: 'c2', host: 'h', ms: 300, resumed: true, loosened: [] },
    ),
  );
  expect(t.items.filter((i) => i.kind === 'marker')).toEqual([
    expect.objectContaining({ text: 'Sandbox main provisioned in 1.2 s', detail: 'loosened: network: bridge' }),
    {
      kind: 'marker',
      id: expect.any(String),
      at: T,
      text: 'Sandbox main lost',
      detail: 'container exited (137); the next call gets a new one',
      tone: 'warn',
    },
    { kind: 'marker', id: expect.any(String), at: T, text: 'Sandbox main resumed in 0.3 s' },
  ]);
  // Each marker stands before the call it was provisioned for, or that found it gone; the calls keep their results.
  expect(
    t.items.map((i) =>
      i.kind === 'call' ? `call ${i.result?.isError ? 'error' : (i.result?.text ?? 'open')}` : i.kind,
    ),
  ).toEqual(['user', 'marker', 'call ok', 'marker', 'call error', 'marker']);
  expect(t.call(t.items[4].id)).toBe(t.items[4]);
  expect(t.status).toBe('running');
});

it("collects each sandbox's workspace snapshots and restores, with no line in the conversation for a snapshot", () => {
  const snap = (name: string, n: number, newBytes: number): Draft => ({
    type: 'workspace_snapshot',
    name,
    snapshotSeq: n,
    files: 3 + n,
    sizeBytes: 1000 * n,
    chunkCount: 3 + n,
    newChunks: newBytes ? 1 : 0,
    newBytes,
  });
  const events = api(
    started,
    { type: 'user_message', text: 'write' },
    ...toolTurn('toolu_1', 'bash', { command: 'touch a' }),
    { type: 'tool_result', toolUseId: 'toolu_1', output: '', isError: false },
    snap('main', 1, 4000),
    snap('main', 2, 0),
    snap('build', 1, 700),
    ...toolTurn('toolu_2', 'bash', { command: 'ls' }),
    {
      type: 'workspace_restored',
      name: 'main',
      sandboxId: 'c9',
      host: 'h2',
      snapshotSeq: 2,
      takenAt: '2026-12-01T09:59:00.000Z',
      files: 5,
      sizeBytes: 2000,
      ms: 1840,
    },
    { type: 'tool_result', toolUseId: 'toolu_2', output: 'a', isError: false },
  );
  const t = new Timeline();
  t.push(events);
  // The list and the stream overlapping add nothing twice.
  expect(t.push(events)).toBe(false);
  expect(t.snapshots).toEqual([
    {
      id: expect.any(String),
      sandbox: 'main',
      seq: 1,
      at: T,
      files: 4,
      sizeBytes: 1000,
      chunkCount: 4,
      newChunks: 1,
      newBytes: 4000,
    },
    {
      id: expect.any(String),
      sandbox: 'main',
      seq: 2,
      at: T,
      files: 5,
      sizeBytes: 2000,
      chunkCount: 5,
      newChunks: 0,
      newBytes: 0,
    },
    {
      id: expect.any(String),
      sandbox: 'build',
      seq: 1,
      at: T,
      files: 4,
      sizeBytes: 1000,
      chunkCount: 4,
      newChunks: 1,
      newBytes: 700,
    },
  ]);
  expect(t.restores).toEqual([
    {
      id: expect.any(String),
      sandbox: 'main',
      sandboxId: 'c9',
      seq: 2,
      takenAt: '2026-12-01T09:59:00.000Z',
      at: T,
      files: 5,
      sizeBytes: 2000,
      durationMs: 1840,
    },
  ]);
  // A snapshot is no line of the conversation; a restore stays a marker before the call it was made for.
  expect(t.items.map((i) => i.kind)).toEqual(['user', 'call', 'marker', 'call']);
  expect(t.items[2]).toMatchObject({ text: 'Workspace of main restored from snapshot 2 in 1.8 s' });
});

it('splits SSE frames across chunk boundaries, CRLF and comments alike', () => {
  const text =
    ': stream open\n\nevent: agent.message\ndata: {"id":"sevt_1"}\n\nevent: ping\r\ndata: {}\r\n\r\nevent: user.message\ndata: {"id":';
  const first = parseFrames(text);
  expect(first.frames).toEqual([
    { event: 'agent.message', data: '{"id":"sevt_1"}' },
    { event: 'ping', data: '{}' },
  ]);
  const second = parseFrames(`${first.rest}"sevt_2"}\n\n`);
  expect(second.frames).toEqual([{ event: 'user.message', data: '{"id":"sevt_2"}' }]);
  expect(second.rest).toBe('');
});

it('folds long text to its head, and prices usage by model, dated ids included', () => {
  expect(folded('short\ntext')).toBeUndefined();
  const long = Array.from({ length: 60 }, (_, i) => `row-${i + 1}`).join('\n');
  expect(folded(long)).toEqual({ head: long.split('\n').slice(0, FOLD_LINES).join('\n'), lines: 60 });
  expect(folded('x'.repeat(5000))?.head.length).toBe(1500);
  const prices = { 'claude-sonnet-4-5': { input: 3, output: 15 } };
  const u = {
    input_tokens: 1_000_000,
    output_tokens: 100_000,
    cache_read_input_tokens: 1_000_000,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
  };
  expect(cost(prices, 'claude-sonnet-4-5-20250929', u)).toBeCloseTo(3 + 1.5 + 0.3);
  expect(cost(prices, 'claude-test', u)).toBeUndefined();
  expect([dollars(undefined), dollars(0), dollars(0.004), dollars(4.8)]).toEqual(['–', '$0.00', '$0.0040', '$4.80']);
});

it('writes file sizes as people read them', () => {
  expect([0, 269, 1023, 1024, 4300, 10 * 1024, 100 * 1024 * 1024, 3 * 1024 ** 3].map(bytes)).toEqual([
    '0 B',
    '269 B',
    '1023 B',
    '1.0 KB',
    '4.2 KB',
    '10 KB',
    '100 MB',
    '3.0 GB',
  ]);
});

it('shows an outcome and its evaluations as markers, idle only once the outcome is over', () => {
  const reply = (text: string): Draft => ({
    type: 'assistant_message',
    content: [{ type: 'text', text }],
    stopReason: 'end_turn',
    usage,
  });
  const o = 'outc_1';
  const events = api(
    started,
    { type: 'outcome_defined', outcomeId: o, description: 'Write a haiku', rubric: 'three lines', maxIterations: 2 },
    { type: 'user_message', text: 'Write a haiku', source: 'harness' },
    reply('one line'),
    { type: 'outcome_evaluation_started', outcomeId: o, iteration: 0 },
    { type: 'outcome_evaluation_ongoing', outcomeId: o, iteration: 0 },
    {
      type: 'outcome_evaluated',
      outcomeId: o,
      iteration: 0,
      result: 'needs_revision',
      explanation: 'only one line',
      evaluated: true,
      model: 'm',
      usage,
    },
    { type: 'user_message', text: 'revise', source: 'harness' },
    reply('three\nlines\nnow'),
    { type: 'outcome_evaluation_started', outcomeId: o, iteration: 1 },
    { type: 'outcome_evaluated', outcomeId: o, iteration: 1, result: 'satisfied', explanation: 'ok', evaluated: true },
  );
  // The projection: the session runs from the definition to the last verdict, and goes idle once.
  expect(events.filter((e) => e.type.startsWith('session.status')).map((e) => e.type)).toEqual([
    'session.status_running',
    'session.status_idle',
  ]);
  expect(events.at(-1)).toMatchObject({ type: 'session.status_idle', stop_reason: { type: 'end_turn' } });
  const starts = events.filter((e) => e.type === 'span.outcome_evaluation_start');
  expect(events.filter((e) => e.type === 'span.outcome_evaluation_end')).toMatchObject([
    { iteration: 0, result: 'needs_revision', outcome_evaluation_start_id: starts[0].id },
    { iteration: 1, result: 'satisfied', outcome_evaluation_start_id: starts[1].id },
  ]);
  const t = new Timeline();
  t.push(events);
  const markers = t.items.flatMap((i) => (i.kind === 'marker' ? [i.text] : []));
  expect(markers).toEqual([
    'Outcome: Write a haiku',
    'Evaluation 1: grading the work',
    'Evaluation 1: needs revision',
    'Evaluation 2: grading the work',
    'Evaluation 2: satisfied',
  ]);
  expect(t.items.some((i) => i.kind === 'other')).toBe(false);
});
