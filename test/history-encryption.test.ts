// History at rest is ciphertext: a session's inputs, results, messages and failure messages never reach the
// Temporal server in the clear, the Web UI reads them through the codec server, and plain JSON from other clients still works.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyFromJSON, historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { ENCRYPTED_ENCODING, EncryptionCodec, parseCodecKeys } from '../src/codec';
import { CodecServer } from '../src/codec/codec-server';
import { endSignal, statusQuery, userMessageSignal } from '../src/session/contract';
import {
  allEvents,
  say,
  startHarness,
  startSession,
  temporalCliPath,
  testDataConverter,
  waitForEvents,
  workflowBundle,
  type Harness,
} from './helpers/env';
import { TEST_CODEC_KEY } from './helpers/test-keys';
import { grpcInterceptors } from '../src/temporal-connection';

const tag = randomBytes(6).toString('hex');
const SECRETS = {
  start: `SECRET-IN-START-${tag}`,
  update: `SECRET-IN-UPDATE-${tag}`,
  signal: `SECRET-IN-SIGNAL-${tag}`,
  retry: `MARKER-IN-RETRY-${tag}`,
  failure: `MARKER-IN-FAILURE-${tag}`,
  end: `SECRET-IN-END-${tag}`,
};
const PLAIN_TEXT = 'plain JSON from the Temporal CLI';
const UI_ORIGIN = 'http://localhost:8233';

/** Every way a marker could show in history JSON: as text, or inside base64 at any of the three byte alignments. */
function leaks(doc: string, marker: string): string[] {
  const forms = [marker];
  for (let pad = 0; pad < 3; pad++) {
    const b64 = Buffer.concat([Buffer.alloc(pad), Buffer.from(marker)])
      .toString('base64')
      .replace(/=+$/, '');
    // Drop the characters that also carry bits of the neighbouring bytes.
    forms.push(b64.slice(Math.ceil((pad * 8) / 6), -2));
  }
  return forms.filter((f) => doc.includes(f));
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}
const b64text = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');

/** Every payload in a history's JSON, with the path it sits at. */
function payloadsIn(node: unknown, at = ''): { at: string; payload: JsonPayload }[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => payloadsIn(n, `${at}[${i}]`));
  if (!node || typeof node !== 'object') return [];
  const obj = node as Record<string, unknown>;
  const meta = obj.metadata as Record<string, unknown> | undefined;
  if (meta && typeof meta.encoding === 'string') return [{ at, payload: obj as JsonPayload }];
  return Object.entries(obj).flatMap(([k, v]) => payloadsIn(v, `${at}.${k}`));
}

/** Every failure (an object with a message and failure info) in a history's JSON. */
function failuresIn(node: unknown, at = ''): { at: string; failure: Record<string, unknown> }[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => failuresIn(n, `${at}[${i}]`));
  if (!node || typeof node !== 'object') return [];
  const obj = node as Record<string, unknown>;
  const own = /(^|\.)(failure|lastFailure|cause)$/.test(at) ? [{ at, failure: obj }] : [];
  return [...own, ...Object.entries(obj).flatMap(([k, v]) => failuresIn(v, `${at}.${k}`))];
}

/** Runs the Temporal CLI without blocking this process, which serves the codec endpoint the CLI calls. */
function temporal(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(temporalCliPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let h: Harness;
let sessionId: string;
let rawJson: string;
let shownJson: string;
let plainClient: Client;

beforeAll(async () => {
  h = await startHarness();
  const handle = await startSession(h, { message: { text: `my api key is ${SECRETS.start}` } });
  sessionId = handle.workflowId;
  await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message'));
  await say(handle, `the update carries ${SECRETS.update}`);
  await handle.signal(userMessageSignal, { text: `the signal carries ${SECRETS.signal}` });
  await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 3);
  h.mock.script(sessionId, {
    steps: [
      { status: 500, message: SECRETS.retry },
      { status: 400, message: SECRETS.failure },
    ],
  });
  await say(handle, 'this turn fails');
  const cli = spawnSync(
    temporalCliPath(),
    [
      'workflow',
      'signal',
      '--address',
      h.env.address,
      '--workflow-id',
      sessionId,
      '--name',
      'userMessage',
      '--input',
      JSON.stringify({ text: PLAIN_TEXT }),
    ],
    { encoding: 'utf8' },
  );
  expect(cli.status).toBe(0);
  await waitForEvents(handle, (ev) =>
    ev.some((e) => e.type === 'assistant_message' && e.content[0].text === `You said: ${PLAIN_TEXT}`),
  );
  await handle.signal(endSignal, { reason: SECRETS.end });
  await handle.result();

  // A client with no codec sees what the server stores.
  plainClient = new Client({
    connection: await Connection.connect({ address: h.env.address, interceptors: grpcInterceptors() }),
    namespace: 'default',
  });
  rawJson = historyToJSON(await plainClient.workflow.getHandle(sessionId).fetchHistory());
  const shown = spawnSync(
    temporalCliPath(),
    ['workflow', 'show', '--address', h.env.address, '--workflow-id', sessionId, '--output', 'json'],
    { encoding: 'utf8' },
  );
  expect(shown.status).toBe(0);
  shownJson = shown.stdout;
}, 180_000);

afterAll(async () => {
  await plainClient?.connection.close();
  await h?.stop();
});

describe('encrypted history', () => {
  it('still serves the session in the clear to a client holding the key, failure message included', async () => {
    const events = await allEvents(h.env.client.workflow.getHandle(sessionId));
    const texts = events.flatMap((e) => (e.type === 'user_message' ? [e.text] : []));
    expect(texts).toEqual([
      `my api key is ${SECRETS.start}`,
      `the update carries ${SECRETS.update}`,
      `the signal carries ${SECRETS.signal}`,
      'this turn fails',
      PLAIN_TEXT,
    ]);
    const error = events.find((e) => e.type === 'error');
    expect(error?.type === 'error' && error.message).toContain(SECRETS.failure);
    expect(events.at(-1)).toMatchObject({ type: 'session_ended', reason: SECRETS.end });
  });

  it('stores none of the secrets, in text or base64, in the raw history or in `temporal workflow show`', () => {
    // The markers did travel: the plain CLI input shows in the raw history, so a search like this one finds text.
    expect(leaks(rawJson, PLAIN_TEXT).length).toBeGreaterThan(0);
    for (const doc of [rawJson, shownJson]) {
      for (const marker of Object.values(SECRETS))
        expect({ marker, found: leaks(doc, marker) }).toEqual({ marker, found: [] });
    }
  });

  it('encrypts every payload: input, activity results, signals, updates, failures and the result', () => {
    const all = payloadsIn(JSON.parse(rawJson));
    const plain = all.filter((p) => b64text(p.payload.metadata?.encoding) !== ENCRYPTED_ENCODING);
    // Plain are the CLI's own signal, which the codec left alone, the SDK's record of a workflow patch (its id, in
    // the marker and the TemporalChangeVersion search attribute), and the session's search attributes: the server
    // indexes those, so no codec sees them, and they hold only the agent's name, its model and the session state.
    const shown = plain.map(
      (p) => [p.at.replace(/^\.events\[\d+\]/, ''), JSON.parse(b64text(p.payload.data))] as [string, unknown],
    );
    const searchAttribute = /^\.upsertWorkflowSearchAttributesEventAttributes\.searchAttributes\.indexedFields\./;
    expect(shown.filter(([at]) => !searchAttribute.test(at))).toEqual([
      ['.markerRecordedEventAttributes.details.patch-data.payloads[0]', { deprecated: false, id: 'search-attributes' }],
      ['.markerRecordedEventAttributes.details.patch-data.payloads[0]', { deprecated: false, id: 'model-tool-refs' }],
      ['.markerRecordedEventAttributes.details.patch-data.payloads[0]', { deprecated: false, id: 'idle-timer-kept' }],
      ['.markerRecordedEventAttributes.details.patch-data.payloads[0]', { deprecated: false, id: 'model-retry-event' }],
      [
        '.markerRecordedEventAttributes.details.patch-data.payloads[0]',
        { deprecated: false, id: 'state-running-delay' },
      ],
      ['.markerRecordedEventAttributes.details.patch-data.payloads[0]', { deprecated: false, id: 'model-tail-digest' }],
      ['.workflowExecutionSignaledEventAttributes.input.payloads[0]', { text: PLAIN_TEXT }],
      ['.markerRecordedEventAttributes.details.patch-data.payloads[0]', { deprecated: false, id: 'session-archive' }],
    ]);
    const allowed: Record<string, unknown[]> = {
      TemporalChangeVersion: [
        ['search-attributes'],
        ['model-tool-refs', 'search-attributes'],
        ['idle-timer-kept', 'model-tool-refs', 'search-attributes'],
        ['idle-timer-kept', 'model-retry-event', 'model-tool-refs', 'search-attributes'],
        ['idle-timer-kept', 'model-retry-event', 'model-tool-refs', 'search-attributes', 'state-running-delay'],
        [
          'idle-timer-kept',
          'model-retry-event',
          'model-tail-digest',
          'model-tool-refs',
          'search-attributes',
          'state-running-delay',
        ],
        [
          'idle-timer-kept',
          'model-retry-event',
          'model-tail-digest',
          'model-tool-refs',
          'search-attributes',
          'session-archive',
          'state-running-delay',
        ],
      ],
      AgentName: ['test'],
      AgentModel: ['claude-test'],
      AgentSessionState: ['waiting_for_user', 'running', 'rescheduling', 'requires_action', 'ended'],
    };
    for (const [at, value] of shown.filter(([a]) => searchAttribute.test(a))) {
      const name = at.replace(searchAttribute, '');
      expect({
        name,
        value,
        allowed: (allowed[name] ?? []).some((v) => JSON.stringify(v) === JSON.stringify(value)),
      }).toEqual({ name, value, allowed: true });
    }
    const encryptedAt = new Set(
      all
        .filter((p) => !plain.includes(p))
        .map((p) => p.at.replace(/^\.events\[\d+\]\./, '').replace(/\[\d+\]/g, '[]')),
    );
    for (const where of [
      'workflowExecutionStartedEventAttributes.input.payloads[]',
      'activityTaskScheduledEventAttributes.input.payloads[]',
      'activityTaskCompletedEventAttributes.result.payloads[]',
      'workflowExecutionSignaledEventAttributes.input.payloads[]',
      'workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest.input.args.payloads[]',
      'workflowExecutionUpdateCompletedEventAttributes.outcome.success.payloads[]',
      // Both failed attempts (the logged retry's 500 and the refusal); no attempt is retried inside Temporal here.
      'activityTaskFailedEventAttributes.failure.encodedAttributes',
      'workflowExecutionCompletedEventAttributes.result.payloads[]',
      // Activity summaries (`model turn 1`, `bash: ...`) and the first-message memo are sealed like any payload.
      'userMetadata.summary',
      'workflowPropertiesModifiedEventAttributes.upsertedMemo.fields.firstMessage',
    ])
      expect({ where, encrypted: encryptedAt.has(where) }).toEqual({ where, encrypted: true });
  });

  it('records failure messages and stack traces only in encrypted form', () => {
    const failures = failuresIn(JSON.parse(rawJson));
    // The transient 500 and the refusal: each attempt's failure comes back to the workflow (a logged retry).
    expect(failures.map((f) => f.at.replace(/^\.events\[\d+\]\./, ''))).toEqual([
      'activityTaskFailedEventAttributes.failure',
      'activityTaskFailedEventAttributes.failure',
    ]);
    for (const { at, failure } of failures) {
      expect({ at, message: failure.message, stackTrace: failure.stackTrace ?? '' }).toEqual({
        at,
        message: 'Encoded failure',
        stackTrace: '',
      });
      expect(b64text((failure.encodedAttributes as JsonPayload).metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    }
  });

  it('leaves a client without the key unable to read the session', async () => {
    await expect(plainClient.workflow.getHandle(sessionId).query(statusQuery)).rejects.toThrow(/binary\/encrypted/);
  });
});

describe('the codec server, called as the Web UI calls it', () => {
  let server: CodecServer;
  beforeAll(async () => {
    server = new CodecServer({ codec: new EncryptionCodec(parseCodecKeys(TEST_CODEC_KEY)), namespaces: ['default'] });
    await server.start();
  });
  afterAll(() => server.stop());

  const decode = (body: unknown, headers: Record<string, string>) =>
    fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers },
      body: JSON.stringify(body),
    });

  it('decodes the payloads of raw history events back into the session data', async () => {
    const events = (JSON.parse(rawJson) as { events: Record<string, Record<string, unknown>>[] }).events;
    const started = events.find((e) => e.workflowExecutionStartedEventAttributes)!;
    const input = started.workflowExecutionStartedEventAttributes.input as { payloads: JsonPayload[] };
    const res = await decode({ payloads: input.payloads }, { Origin: UI_ORIGIN });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    const decoded = (await res.json()) as { payloads: JsonPayload[] };
    // Put back into the event, as the Web UI does before rendering it.
    const event = {
      ...started,
      workflowExecutionStartedEventAttributes: { ...started.workflowExecutionStartedEventAttributes, input: decoded },
    };
    const [arg] = event.workflowExecutionStartedEventAttributes.input.payloads.map((p: JsonPayload) => {
      expect(b64text(p.metadata?.encoding)).toBe('json/plain');
      return JSON.parse(b64text(p.data)) as { message: { text: string }; agent: { name: string } };
    });
    expect(arg).toMatchObject({ message: { text: `my api key is ${SECRETS.start}` }, agent: { name: 'test' } });

    // The last failed attempt: the refusal, after the logged retry of the 500.
    const failed = events.filter((e) => e.activityTaskFailedEventAttributes).at(-1)!;
    const failure = failed.activityTaskFailedEventAttributes.failure as { encodedAttributes: JsonPayload };
    const attrs = (await (await decode({ payloads: [failure.encodedAttributes] }, { Origin: UI_ORIGIN })).json()) as {
      payloads: JsonPayload[];
    };
    expect(JSON.parse(b64text(attrs.payloads[0].data))).toMatchObject({
      message: expect.stringContaining(SECRETS.failure),
    });
  });

  it('refuses a request with no auth and no allowed origin, and returns no payload data', async () => {
    const events = (JSON.parse(rawJson) as { events: Record<string, Record<string, { payloads: JsonPayload[] }>>[] })
      .events;
    const input = events.find((e) => e.workflowExecutionStartedEventAttributes)!.workflowExecutionStartedEventAttributes
      .input;
    for (const [headers, status] of [
      [{}, 401],
      [{ Origin: 'http://attacker.example' }, 403],
    ] as const) {
      const res = await decode(input, headers);
      expect(res.status).toBe(status);
      const body = await res.text();
      expect(body).not.toContain('payloads');
      expect(leaks(body, SECRETS.start)).toEqual([]);
    }
  });

  it('lets the Temporal CLI show a decoded history with the bearer token, and not without it', async () => {
    const token = randomBytes(16).toString('hex');
    const withToken = new CodecServer({ codec: new EncryptionCodec(parseCodecKeys(TEST_CODEC_KEY)), token });
    const url = await withToken.start();
    try {
      const show = (extra: string[]) =>
        temporal([
          'workflow',
          'show',
          '--address',
          h.env.address,
          '--workflow-id',
          sessionId,
          '--output',
          'json',
          '--codec-endpoint',
          url,
          ...extra,
        ]);
      const ok = await show(['--codec-auth', `Bearer ${token}`]);
      expect(ok.stderr).toBe('');
      expect(ok.code).toBe(0);
      // Decoded payloads are json/plain, still base64 in proto JSON.
      expect(ok.stdout).toContain(Buffer.from('json/plain').toString('base64'));
      expect(leaks(ok.stdout, SECRETS.start).length).toBeGreaterThan(0);
      const refused = await show([]);
      expect(leaks(refused.stdout, SECRETS.start)).toEqual([]);
      // The CLI retries a refused codec call until its deadline, then fails.
      expect(refused.code).not.toBe(0);
    } finally {
      await withToken.stop();
    }
  });
});

describe('replay with the codec', () => {
  it('replays the encrypted history, and the plain recorded fixtures, whose payloads pass through', async () => {
    const dir = path.join(__dirname, 'histories');
    const histories = [
      { workflowId: sessionId, history: historyFromJSON(JSON.parse(rawJson)) },
      // Fixtures recorded with encryption use the fixture key and replay in test/replay.test.ts; here, the plain ones.
      ...fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.json'))
        .map((f) => ({ f, text: fs.readFileSync(path.join(dir, f), 'utf8') }))
        .filter(({ text }) => !text.includes(Buffer.from('binary/encrypted').toString('base64')))
        .map(({ f, text }) => ({ workflowId: f, history: historyFromJSON(JSON.parse(text)) })),
    ];
    const results = [];
    for await (const r of Worker.runReplayHistories(
      { workflowBundle: await workflowBundle(), dataConverter: testDataConverter() },
      histories,
    ))
      results.push(r);
    expect(results.map((r) => ({ workflowId: r.workflowId, error: r.error?.message }))).toEqual(
      histories.map((x) => ({ workflowId: x.workflowId, error: undefined })),
    );
  });
});
