// Hostile model output: malformed SSE, invalid JSON in tool_use input, unknown tool names, unknown block types,
// missing fields. The real SDK parses what the local server streams; a reply that passes validation must be
// one the API accepts back, a bad tool call gets a readable tool_result, and no workflow task ever fails.
import fc from 'fast-check';
import { z } from 'zod';
import { ApplicationFailure } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import { AnthropicModelClient } from '../../src/model/model-client';
import { toModelFailure } from '../../src/model/model-errors';
import { validateRequest } from '../../src/dev/request-checks';
import { ContentBlockSchema } from '../../src/session/events';
import { readRunEvents } from '../../src/tools/session-events';
import { sendMessageUpdate } from '../../src/session/contract';
import { say, startHarness, startSession, turnDone, waitForEvents, type Harness } from '../helpers/env';
import {
  LIVE_RUNS,
  SEED,
  directParams,
  failedWorkflowTasks,
  hostileJson,
  hostileString,
  inBatches,
  liveSample,
} from './fuzz-helpers';

type Sse = { event: string; data: unknown }[];

/** The wire form of an event stream; a string `data` is sent as is (so it can be invalid JSON). */
function render(events: Sse): string {
  return events
    .map((e) => `event: ${e.event}\ndata: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`)
    .join('');
}

const messageStart = (usage: unknown = { input_tokens: 3, output_tokens: 1 }) => ({
  event: 'message_start',
  data: {
    type: 'message_start',
    message: {
      id: 'msg_fuzz',
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage,
    },
  },
});
const stop = (stopReason = 'end_turn'): Sse => [
  {
    event: 'message_delta',
    data: {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: 5 },
    },
  },
  { event: 'message_stop', data: { type: 'message_stop' } },
];

/** A block as streamed: its start, the deltas of its text or input JSON, its stop. */
function blockEvents(index: number, block: Record<string, unknown>, inputJson?: string): Sse {
  const out: Sse = [];
  if (block.type === 'tool_use') {
    out.push({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block: { ...block, input: {} } },
    });
    const json = inputJson ?? JSON.stringify(block.input ?? {});
    const half = Math.ceil(json.length / 2);
    for (const part of [json.slice(0, half), json.slice(half)])
      out.push({
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: part } },
      });
  } else if (block.type === 'text' && typeof block.text === 'string') {
    out.push({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block: { ...block, text: '' } },
    });
    out.push({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } },
    });
  } else out.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: block } });
  out.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  return out;
}

const stream = (blocks: { block: Record<string, unknown>; inputJson?: string }[], usage?: unknown): Sse => [
  messageStart(usage),
  ...blocks.flatMap((b, i) => blockEvents(i, b.block, b.inputJson)),
  ...stop(blocks.some((b) => b.block.type === 'tool_use') ? 'tool_use' : 'end_turn'),
];

const toolName = fc.oneof(
  fc.constantFrom('bash', 'session_events', 'git_push', 'mcp__x__y', 'Bash', 'session_events '),
  hostileString,
);
const plausibleInput = fc.oneof(
  fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }),
  fc.record({ from: hostileJson, limit: hostileJson }, { requiredKeys: [] }),
);
/** Partial JSON as a model might stream it: truncated, doubled, not JSON at all. */
const badJson = fc.oneof(
  hostileString,
  plausibleInput.map((o) => JSON.stringify(o).slice(0, -1)),
  plausibleInput.map((o) => `${JSON.stringify(o)}}`),
  plausibleInput.map((o) => `${JSON.stringify(o)}${JSON.stringify(o)}`),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.constantFrom('', '{', '[1,2', '"str', 'null', '{"command": "ls"', '{]', 'NaN', '{"a":tru'),
);
const unknownType = fc.oneof(
  fc.constantFrom(
    'thinking',
    'redacted_thinking',
    'server_tool_use',
    'web_search_tool_result',
    'image',
    'document',
    'TEXT',
    'tool_result',
    '',
  ),
  hostileString,
);
const unknownBlock = fc
  .tuple(unknownType, fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }))
  .map(([type, rest]) => ({ ...rest, type }));
/** Blocks with fields missing or of the wrong type. */
const brokenBlock = fc.oneof(
  fc.record({ type: fc.constant('text'), text: hostileJson }, { requiredKeys: ['type'] }),
  fc.record(
    {
      type: fc.constant('tool_use'),
      id: fc.oneof(hostileString, hostileJson),
      name: fc.oneof(toolName, hostileJson),
      input: hostileJson,
    },
    { requiredKeys: ['type'] },
  ),
  fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }),
);
const anyBlock = fc.oneof(
  fc.record({ type: fc.constant('text'), text: hostileString }),
  fc.record({ type: fc.constant('tool_use'), id: fc.string(), name: toolName, input: plausibleInput }),
  unknownBlock,
  brokenBlock,
);
const usageArb = fc.oneof(
  fc.constant(undefined),
  fc.record({ input_tokens: hostileJson, output_tokens: hostileJson }, { requiredKeys: [] }),
  hostileJson,
);

/** A whole stream, then maybe broken: events dropped, repeated, replaced by garbage, or cut short. */
const malformedSse = fc
  .tuple(
    fc.array(fc.record({ block: anyBlock, inputJson: fc.option(badJson, { nil: undefined }) }), { maxLength: 3 }),
    usageArb,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom('drop', 'dup', 'garbage', 'rename', 'nodata')), { maxLength: 3 }),
    fc.option(fc.nat(), { nil: undefined }),
  )
  .map(([blocks, usage, mutations, cut]) => {
    const events = stream(blocks, usage);
    for (const [at, kind] of mutations) {
      const i = at % events.length;
      if (kind === 'drop') events.splice(i, 1);
      else if (kind === 'dup') events.splice(i, 0, events[i]);
      else if (kind === 'garbage')
        events[i] = { event: events[i].event, data: `{"type":"${events[i].event}",${'x'.repeat(at % 7)}` };
      else if (kind === 'rename')
        events[i] = {
          event: `x_${events[i].event}`,
          data: { ...(events[i].data as object), type: `x_${events[i].event}` },
        };
      else events[i] = { event: events[i].event, data: '' };
      if (events.length === 0) break;
    }
    const text = render(events);
    return cut === undefined ? text : text.slice(0, cut % (text.length + 1));
  });

const ReplyContentSchema = z.array(ContentBlockSchema);

describe('model output parsers, in process (1,000 cases per kind)', () => {
  let h: Harness;
  let client: AnthropicModelClient;
  beforeAll(async () => {
    h = await startHarness({ worker: false });
    client = new AnthropicModelClient({ baseURL: h.mock.url, apiKey: 'test-key' });
  });
  afterAll(async () => {
    await h?.stop();
  });

  let n = 0;
  /** Streams `sse` through the real SDK; returns the validated content, or the failure the activity would raise. */
  async function parse(sse: string): Promise<{ content: unknown[] } | { failure: ApplicationFailure }> {
    const sessionId = `direct-${++n}`;
    h.mock.script(sessionId, { steps: [{ rawSse: sse }] });
    try {
      const reply = await client.createMessage(
        {
          sessionId,
          model: 'claude-test',
          messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
          tools: [],
          maxTokens: 100,
        },
        {},
      );
      const content = ReplyContentSchema.safeParse(reply.content);
      if (!content.success)
        return {
          failure: ApplicationFailure.create({ message: content.error.message, type: 'ModelError.InvalidOutput' }),
        };
      for (const k of ['inputTokens', 'outputTokens', 'cacheReadInputTokens', 'cacheCreationInputTokens'] as const)
        expect(Number.isInteger(reply.usage[k]) && reply.usage[k] >= 0).toBe(true);
      return { content: content.data };
    } catch (err) {
      return { failure: toModelFailure(err) };
    }
  }

  /** A validated reply must be one the API takes back in the next request, with a result for each tool call. */
  function expectSendable(content: unknown[]) {
    const uses = (content as { type: string; id?: string }[]).filter((b) => b.type === 'tool_use');
    const next = uses.length
      ? [{ role: 'user', content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: 'x' })) }]
      : [];
    const text = (content as { type: string; text?: string }[]).filter((b) => !(b.type === 'text' && b.text === ''));
    expect(() =>
      validateRequest({
        model: 'm',
        max_tokens: 1,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: text.length ? text : [{ type: 'text', text: '.' }] },
          ...next,
          ...(next.length ? [] : [{ role: 'user', content: 'go on' }]),
        ],
      }),
    ).not.toThrow();
    for (const u of uses as unknown as { input: unknown; id: unknown }[]) {
      expect(typeof u.input === 'object' && u.input !== null && !Array.isArray(u.input)).toBe(true);
      expect(typeof u.id === 'string' && u.id.length > 0).toBe(true);
    }
  }

  it('malformed SSE: the SDK either yields a reply the API would take back, or the call fails as a ModelError', async () => {
    await fc.assert(
      fc.asyncProperty(malformedSse, async (sse) => {
        const r = await parse(sse);
        if ('content' in r) expectSendable(r.content);
        else expect(r.failure.type).toMatch(/^ModelError\./);
      }),
      directParams,
    );
  });

  it('invalid JSON in tool_use input: parsed to an object, or the call fails as a ModelError', async () => {
    await fc.assert(
      fc.asyncProperty(fc.tuple(toolName, badJson), async ([name, json]) => {
        const r = await parse(
          render(stream([{ block: { type: 'tool_use', id: 'toolu_1', name, input: {} }, inputJson: json }])),
        );
        if ('content' in r) expectSendable(r.content);
        else expect(r.failure.type).toMatch(/^ModelError\./);
      }),
      directParams,
    );
  });

  it('content blocks of unknown types or with missing fields: validation never throws and rejects only broken known blocks', () => {
    fc.assert(
      fc.property(fc.oneof(unknownBlock, brokenBlock), (block) => {
        const r = ContentBlockSchema.safeParse(block);
        const b = block as Record<string, unknown>;
        if (b.type === 'text') expect(r.success).toBe(typeof b.text === 'string');
        else if (b.type === 'tool_use') {
          const ok =
            typeof b.id === 'string' &&
            b.id !== '' &&
            typeof b.name === 'string' &&
            typeof b.input === 'object' &&
            b.input !== null &&
            !Array.isArray(b.input);
          expect(r.success).toBe(ok);
        } else expect(r.success).toBe(typeof b.type === 'string');
      }),
      directParams,
    );
  });

  it('tool input for session_events: a readable error naming the field, or a result', () => {
    fc.assert(
      fc.property(fc.oneof(plausibleInput, hostileJson), (input) => {
        const r = readRunEvents({ id: 't', name: 'session_events', input }, [], 0);
        if (r.isError) expect(r.output).toMatch(/^invalid input for session_events: \S/);
        else expect(() => JSON.parse(r.output)).not.toThrow();
      }),
      directParams,
    );
  });
});

describe(`model output through a live session (${LIVE_RUNS} cases per kind)`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.stop();
  });

  /** A session that gives up on a bad reply at once, so each case is one model call. */
  const session = () =>
    startSession(h, {
      agent: {
        tools: ['session_events'],
        sandboxes: {},
        limits: { modelRetry: { maxAttempts: 1, initialIntervalMs: 50, maximumIntervalMs: 50, backoffCoefficient: 1 } },
      },
    });

  /** Sends one message answered by `sse`, then one answered normally; returns the log after both. */
  async function turn(handle: WorkflowHandle, sse: string) {
    h.mock.script(handle.workflowId, { steps: [{ rawSse: sse }] });
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    const events = await waitForEvents(handle, turnDone(seq), 30_000);
    return events.filter((e) => e.seq > seq);
  }

  /** After every case: the log has no gaps, the session still answers, no request was refused, no task failed. */
  async function expectHealthy(handle: WorkflowHandle) {
    const events = await say(handle, 'are you there?');
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    expect(events.at(-1)).toMatchObject({
      type: 'assistant_message',
      content: [{ type: 'text', text: 'You said: are you there?' }],
    });
    expect(
      h.mock
        .requests(handle.workflowId)
        .filter((r) => r.status === 400)
        .map((r) => r.body.messages),
    ).toEqual([]);
    expect(await failedWorkflowTasks(handle)).toEqual([]);
  }

  it('unknown tool names: each call gets the tool_result "unknown tool: NAME"', async () => {
    const names = liveSample(
      hostileString.filter(
        (n) => !['bash', 'session_events', 'str_replace_based_edit_tool', 'git_push', 'git_pull'].includes(n),
      ),
    );
    const handle = await session();
    // All fifty in one reply: one tool round.
    const after = await turn(
      handle,
      render(stream(names.map((name, i) => ({ block: { type: 'tool_use', id: `toolu_${i}`, name, input: {} } })))),
    );
    const results = after.filter((e) => e.type === 'tool_result');
    expect(results.map((r) => (r.type === 'tool_result' ? [r.toolUseId, r.output, r.isError] : []))).toEqual(
      names.map((name, i) => [`toolu_${i}`, `unknown tool: ${name}`, true]),
    );
    await expectHealthy(handle);
  });

  it('bad tool input: each call gets a readable tool_result error or a result', async () => {
    const inputs = liveSample(plausibleInput, LIVE_RUNS, SEED + 1);
    const handle = await session();
    const after = await turn(
      handle,
      render(
        stream(
          inputs.map((input, i) => ({ block: { type: 'tool_use', id: `toolu_${i}`, name: 'session_events', input } })),
        ),
      ),
    );
    const results = after.filter((e) => e.type === 'tool_result');
    expect(results).toHaveLength(inputs.length);
    for (const r of results)
      if (r.type === 'tool_result' && r.isError) expect(r.output).toMatch(/^invalid input for session_events: \S/);
    await expectHealthy(handle);
  });

  it('a tool_use with a list for input or an empty id is refused as malformed output, not kept to break every later request', async () => {
    const handle = await session();
    for (const block of [
      { type: 'tool_use', id: 'toolu_1', name: 'session_events', input: [] },
      { type: 'tool_use', id: '', name: 'session_events', input: {} },
    ]) {
      const after = await turn(handle, render(stream([{ block, inputJson: JSON.stringify(block.input) }])));
      expect(after.map((e) => e.type)).toEqual(['error']);
      expect(after[0]).toMatchObject({
        kind: 'model',
        message: expect.stringMatching(
          /^ModelError\.InvalidOutput: model returned malformed content: .*tool_use block needs a non-empty string `id`/s,
        ),
      });
    }
    await expectHealthy(handle);
  });

  for (const [kind, arb] of [
    [
      'invalid JSON in tool_use input',
      fc
        .tuple(toolName, badJson)
        .map(([name, json]) =>
          render(stream([{ block: { type: 'tool_use', id: 'toolu_1', name, input: {} }, inputJson: json }])),
        ),
    ],
    [
      'unknown block types',
      fc
        .array(unknownBlock, { minLength: 1, maxLength: 3 })
        .map((blocks) => render(stream(blocks.map((block) => ({ block }))))),
    ],
    [
      'missing fields',
      fc.tuple(fc.array(brokenBlock, { minLength: 1, maxLength: 2 }), usageArb).map(([blocks, usage]) =>
        render(
          stream(
            blocks.map((block) => ({ block })),
            usage,
          ),
        ),
      ),
    ],
    ['malformed SSE', malformedSse],
  ] as const) {
    it(`${kind}: the turn ends in a reply or a model error event, and the session carries on`, async () => {
      const samples = liveSample(arb as fc.Arbitrary<string>, LIVE_RUNS, SEED + kind.length);
      // Five sessions side by side, ten cases each.
      await inBatches([0, 1, 2, 3, 4], 5, async (k) => {
        const handle = await session();
        for (const sse of samples.filter((_, i) => i % 5 === k)) {
          const after = await turn(handle, sse);
          const last = after.at(-1)!;
          if (last.type === 'error')
            expect(last).toMatchObject({ kind: 'model', message: expect.stringMatching(/^ModelError\.\w+: /) });
          for (const use of after.filter((e) => e.type === 'tool_use'))
            expect(
              after.filter((e) => e.type === 'tool_result' && e.toolUseId === (use.type === 'tool_use' ? use.id : '')),
            ).toHaveLength(1);
        }
        await expectHealthy(handle);
      });
    });
  }
});
