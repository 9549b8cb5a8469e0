// The local Messages API server, driven by the real Anthropic SDK: what it accepts, rejects and injects.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import Anthropic, { APIError } from '@anthropic-ai/sdk';
import { MockModelServer } from '../src/dev/model-server';

let mock: MockModelServer;
let client: Anthropic;
beforeAll(async () => {
  mock = new MockModelServer();
  client = new Anthropic({ apiKey: 'test', baseURL: await mock.start(), maxRetries: 0 });
});
afterAll(async () => {
  await mock.stop();
});

const base = { model: 'claude-test', max_tokens: 100 } as const;
const TOOLS = [
  { name: 'session_events', description: 'read the log', input_schema: { type: 'object' as const, properties: {} } },
];

describe('local Messages API server', () => {
  it('streams a reply over SSE that the SDK assembles into a message', async () => {
    const stream = client.messages.stream({
      ...base,
      messages: [{ role: 'user', content: 'hello world' }],
      metadata: { user_id: 's-sse' },
    });
    const deltas: string[] = [];
    stream.on('text', (t) => deltas.push(t));
    const message = await stream.finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'You said: hello world' }]);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('You said: hello world');
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.input_tokens).toBeGreaterThan(0);
  });

  it('answers plain requests, and streams tool_use input as JSON deltas', async () => {
    const plain = await client.messages.create({
      ...base,
      messages: [{ role: 'user', content: 'show the log' }],
      tools: TOOLS,
    });
    expect(plain.stop_reason).toBe('tool_use');
    const streamed = await client.messages
      .stream({ ...base, messages: [{ role: 'user', content: 'show the log' }], tools: TOOLS })
      .finalMessage();
    expect(streamed.content).toEqual(plain.content);
    expect(streamed.content[1]).toMatchObject({
      type: 'tool_use',
      name: 'session_events',
      input: { from: 0, limit: 20 },
    });
  });

  it('counts tokens', async () => {
    const result = await client.messages.countTokens({
      model: 'claude-test',
      messages: [{ role: 'user', content: 'x'.repeat(400) }],
    });
    expect(result.input_tokens).toBeGreaterThanOrEqual(100);
  });

  it.each([
    [
      'a tool_use without its tool_result',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'session_events', input: {} }] },
        { role: 'user', content: 'next' },
      ],
      /tool_use.*without.*tool_result/,
    ],
    [
      'a conversation ending on an assistant turn (a prefill, which current models refuse)',
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
      ],
      /does not support assistant message prefill/,
    ],
    [
      'a trailing assistant turn split in two',
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'assistant', content: 'c' },
      ],
      /does not support assistant message prefill/,
    ],
    ['a first message from the assistant', [{ role: 'assistant', content: 'hi' }], /first message/],
    [
      'a tool_result for an unknown tool_use',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x', content: 'r' }] },
      ],
      /unexpected `tool_use_id`/,
    ],
    [
      'text before a tool_result',
      [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'session_events', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'x' },
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'r' },
          ],
        },
      ],
      /must come first/,
    ],
    ['an empty text block', [{ role: 'user', content: [{ type: 'text', text: '' }] }], /non-empty/],
  ])('rejects %s with a 400 as the real API does', async (_name, messages, pattern) => {
    const err = await client.messages
      .create({ ...base, messages: messages as Anthropic.MessageParam[] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as APIError).message).toMatch(pattern);
  });

  it('combines consecutive turns of one role, as the real API does', async () => {
    const reply = await client.messages.create({
      ...base,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
    });
    expect(reply.content[0]).toMatchObject({ type: 'text', text: 'You said: b' });
    // The combined turn is checked as one: a tool_result after text is still refused.
    const err = await client.messages
      .create({
        ...base,
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'session_events', input: {} }] },
          { role: 'user', content: 'x' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'r' }] },
        ] as Anthropic.MessageParam[],
      })
      .catch((e: unknown) => e);
    expect((err as APIError).message).toMatch(/must come first/);
  });

  it('continues a trailing assistant turn for a session whose model allows prefill', async () => {
    mock.script('s-prefill', { allowPrefill: true });
    const reply = await client.messages.create({
      ...base,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
      ],
      metadata: { user_id: 's-prefill' },
    });
    expect(reply.stop_reason).toBe('end_turn');
  });

  it('accepts a complete tool round trip', async () => {
    const reply = await client.messages.create({
      ...base,
      tools: TOOLS,
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'session_events', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"events":[]}' },
            { type: 'text', text: 'and?' },
          ],
        },
      ],
    });
    expect(reply.content[0]).toMatchObject({ type: 'text', text: 'You said: and?' });
  });

  it('injects scripted faults per session, keyed by metadata.user_id', async () => {
    mock.script('s-faults', {
      steps: [{ status: 429, retryAfter: 7 }, { status: 529 }, { status: 500 }, { dropMidStream: true }],
    });
    const call = () =>
      client.messages
        .stream({ ...base, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id: 's-faults' } })
        .finalMessage();
    const rateLimited = await call().catch((e: unknown) => e);
    expect(rateLimited).toBeInstanceOf(Anthropic.RateLimitError);
    expect((rateLimited as APIError).headers?.get('retry-after')).toBe('7');
    expect(((await call().catch((e: unknown) => e)) as APIError).status).toBe(529);
    expect(await call().catch((e: unknown) => e)).toBeInstanceOf(Anthropic.InternalServerError);
    const dropped = await call().catch((e: unknown) => e);
    expect(dropped).toBeInstanceOf(Error);
    // Another session is unaffected, and this one recovers once its script is spent.
    const other = await client.messages.create({
      ...base,
      messages: [{ role: 'user', content: 'hi' }],
      metadata: { user_id: 's-other' },
    });
    expect(other.stop_reason).toBe('end_turn');
    expect((await call()).stop_reason).toBe('end_turn');
    expect(mock.requests('s-faults').map((r) => r.status)).toEqual([429, 529, 500, 200, 200]);
  });

  it('delays the first byte when asked', async () => {
    mock.script('s-slow', { steps: [{ firstByteDelayMs: 600 }] });
    const started = Date.now();
    await client.messages.create({
      ...base,
      messages: [{ role: 'user', content: 'hi' }],
      metadata: { user_id: 's-slow' },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    // The record tells when the response began and when it was written to its end.
    const [record] = mock.requests('s-slow');
    expect(record.firstByteAt).toBeGreaterThanOrEqual(record.at);
    expect(record.doneAt).toBeGreaterThanOrEqual(record.firstByteAt!);
  });

  it('remembers only the latest requests, so a server left running keeps bounded memory', async () => {
    const small = new MockModelServer({ maxRecorded: 4 });
    const c = new Anthropic({ apiKey: 'test', baseURL: await small.start(), maxRetries: 0 });
    try {
      for (let i = 1; i <= 9; i++)
        await c.messages.create({
          ...base,
          messages: [{ role: 'user', content: `call ${i}` }],
          metadata: { user_id: 's-cap' },
        });
      const kept = small.requests('s-cap').map((r) => (r.body.messages as { content: string }[])[0].content);
      expect(kept.length).toBeGreaterThanOrEqual(2);
      expect(kept.length).toBeLessThanOrEqual(4);
      // The latest ones, in order.
      expect(kept).toEqual(Array.from({ length: kept.length }, (_, k) => `call ${10 - kept.length + k}`));
      // Each keeps its place among all the requests received.
      expect(small.requests().map((r) => r.n)).toEqual(
        Array.from({ length: kept.length }, (_, k) => 10 - kept.length + k),
      );
    } finally {
      await small.stop();
    }
  });
});

describe('local Messages API server, stopped', () => {
  it('lets its process exit while a response it holds back (a stalled model) is still waiting', () => {
    // A child process: a scripted first byte 10 minutes away, the request aborted, the server stopped. The held-back
    // response's timer must not keep the process alive.
    const script = `
      const { MockModelServer } = require(${JSON.stringify(path.join(__dirname, '..', 'src', 'dev', 'model-server'))});
      (async () => {
        const mock = new MockModelServer();
        const url = await mock.start();
        mock.script('s-held', { steps: [{ firstByteDelayMs: 600000 }] });
        const abort = new AbortController();
        const req = fetch(url + '/v1/messages', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': 'test', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({ model: 'claude-test', max_tokens: 10, metadata: { user_id: 's-held' }, messages: [{ role: 'user', content: 'hi' }] }),
          signal: abort.signal,
        }).catch(() => undefined);
        while (mock.requests('s-held').length === 0) await new Promise((r) => setTimeout(r, 20));
        abort.abort();
        await req;
        await mock.stop();
        console.log('stopped');
      })();
    `;
    const r = spawnSync(
      process.execPath,
      [path.join(__dirname, '..', 'node_modules', 'tsx', 'dist', 'cli.mjs'), '-e', script],
      {
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('stopped');
    // Exited on its own, well before the spawn's timeout would have killed it.
    expect(r.signal).toBeNull();
    expect(r.status).toBe(0);
  });
});
