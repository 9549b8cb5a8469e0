// Hostile signal, update and query arguments: the validators reject them with an error naming the field,
// nothing is appended on a rejection, and no workflow task ever fails.
import fc from 'fast-check';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { formatIssues } from '../../src/session/agent';
import { formatRefusal } from '../../src/session/issues';
import { MAX_FILE_BYTES, resolveWorkspacePath } from '../../src/session/paths';
import {
  EventsQueryArgsSchema,
  GetFileSchema,
  MAX_MESSAGE_BYTES,
  PutFileSchema,
  ReasonSchema,
  ResolveToolUseSchema,
  SubmitToolResultSchema,
  UserMessageSchema,
} from '../../src/session/contract';
import { allEvents, startHarness, startSession, waitForEvents, type Harness } from '../helpers/env';
import {
  LIVE_RUNS,
  directParams,
  failedWorkflowTasks,
  hostileJson,
  hostileString,
  inBatches,
  liveSample,
  overTheWire,
  shaped,
} from './fuzz-helpers';

const base64 = fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64'));
const bigText = fc.constantFrom(
  'x'.repeat(MAX_MESSAGE_BYTES),
  'x'.repeat(MAX_MESSAGE_BYTES + 1),
  'é'.repeat(MAX_MESSAGE_BYTES / 2 + 1),
);
const message = shaped({
  text: fc.oneof(
    { weight: 10, arbitrary: hostileString },
    { weight: 10, arbitrary: fc.string({ minLength: 1 }) },
    { weight: 1, arbitrary: bigText },
  ),
  messageId: hostileString,
});
const reason = fc.oneof(fc.constant(undefined), shaped({ reason: hostileString }));
const eventsArgs = fc.oneof(
  fc.constant(undefined),
  shaped({ from: fc.integer({ min: -5, max: 50 }), limit: fc.integer({ min: -5, max: 6000 }) }),
);
const putFile = shaped({
  sandbox: fc.oneof(fc.constant('main'), hostileString),
  path: hostileString,
  contentBase64: fc.oneof(base64, hostileString),
});
const getFile = shaped({ sandbox: fc.oneof(fc.constant('main'), hostileString), path: hostileString });
const toolUseId = fc.oneof(hostileString, fc.stringMatching(/^toolu_[a-z0-9]{1,20}$/));
const resolve = shaped({
  toolUseId,
  allow: fc.oneof(fc.boolean(), hostileJson),
  reason: hostileString,
  by: fc.oneof(fc.constant('timeout'), hostileString),
});
const submit = shaped({
  toolUseId,
  output: fc.oneof(hostileString, bigText),
  isError: fc.oneof(fc.boolean(), hostileJson),
});

/** The field names a zod error points at, so a rejection can be checked for naming each. */
const fieldsOf = (issues: { path: PropertyKey[] }[]) =>
  issues.filter((i) => i.path.length > 0).map((i) => String(i.path[0]));

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

describe('validators, in process (1,000 cases per kind)', () => {
  it('user messages: accepted only with non-blank text within 1 MB and a 1-200 character messageId; every rejection names its field', () => {
    fc.assert(
      fc.property(message, (raw) => {
        const r = UserMessageSchema.safeParse(raw);
        if (r.success) {
          expect(r.data.text.trim().length).toBeGreaterThan(0);
          expect(utf8Bytes(r.data.text)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
          if (r.data.messageId !== undefined) expect(r.data.messageId.length).toBeGreaterThanOrEqual(1);
          expect(Object.keys(r.data).every((k) => k === 'text' || k === 'messageId')).toBe(true);
        } else {
          const text = formatIssues(r.error);
          for (const f of fieldsOf(r.error.issues)) expect(text).toContain(f);
          expect(text.length).toBeGreaterThan(0);
        }
      }),
      directParams,
    );
  });

  it('interrupt and end reasons: a string of at most 10,000 characters, or nothing', () => {
    fc.assert(
      fc.property(reason, (raw) => {
        const r = ReasonSchema.safeParse(raw ?? {});
        if (r.success)
          expect(
            r.data.reason === undefined || (typeof r.data.reason === 'string' && r.data.reason.length <= 10_000),
          ).toBe(true);
        else for (const f of fieldsOf(r.error.issues)) expect(formatIssues(r.error)).toContain(f);
      }),
      directParams,
    );
  });

  it('resolveToolUse and submitToolResult: accepted only well-typed, with a 1-200 character id; every rejection names its field', () => {
    fc.assert(
      fc.property(resolve, submit, (rawResolve, rawSubmit) => {
        const r = ResolveToolUseSchema.safeParse(rawResolve);
        if (r.success) {
          expect(typeof r.data.allow).toBe('boolean');
          expect(r.data.toolUseId.length).toBeGreaterThanOrEqual(1);
          expect(r.data.by).not.toBe('timeout');
        } else for (const f of fieldsOf(r.error.issues)) expect(formatIssues(r.error)).toContain(f);
        const t = SubmitToolResultSchema.safeParse(rawSubmit);
        if (t.success) {
          expect(utf8Bytes(t.data.output)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
          expect(typeof t.data.isError).toBe('boolean');
        } else for (const f of fieldsOf(t.error.issues)) expect(formatIssues(t.error)).toContain(f);
      }),
      directParams,
    );
  });

  it('events query arguments: integers in range or the defaults', () => {
    fc.assert(
      fc.property(eventsArgs, (raw) => {
        const r = EventsQueryArgsSchema.safeParse(raw ?? {});
        if (r.success) {
          expect(Number.isInteger(r.data.from) && r.data.from >= 0).toBe(true);
          expect(Number.isInteger(r.data.limit) && r.data.limit >= 1 && r.data.limit <= 5000).toBe(true);
        } else for (const f of fieldsOf(r.error.issues)) expect(formatIssues(r.error)).toContain(f);
      }),
      directParams,
    );
  });

  it('putFile: an accepted path always resolves inside the workspace, and content is base64', () => {
    fc.assert(
      fc.property(putFile, (raw) => {
        const r = PutFileSchema.safeParse(raw);
        if (!r.success) {
          for (const f of fieldsOf(r.error.issues)) expect(formatIssues(r.error)).toContain(f);
          return;
        }
        expect(Buffer.from(r.data.contentBase64, 'base64').length).toBeLessThanOrEqual(MAX_FILE_BYTES);
        let resolved: string | undefined;
        try {
          resolved = resolveWorkspacePath('/workspace', r.data.path);
        } catch (e) {
          expect((e as Error).message).toMatch(/^path /);
        }
        if (resolved !== undefined) {
          expect(resolved.startsWith('/workspace/')).toBe(true);
          expect(resolved.split('/')).not.toContain('..');
          expect(resolved).not.toContain('\0');
        }
      }),
      directParams,
    );
  });

  it('getFile: an accepted path always resolves inside the workspace', () => {
    fc.assert(
      fc.property(getFile, fc.constantFrom('/workspace', '/home/agent/work', '/'), (raw, workdir) => {
        const r = GetFileSchema.safeParse(raw);
        if (!r.success) {
          for (const f of fieldsOf(r.error.issues)) expect(formatIssues(r.error)).toContain(f);
          return;
        }
        try {
          const resolved = resolveWorkspacePath(workdir, r.data.path);
          const root = workdir === '/' ? '' : workdir;
          expect(resolved.startsWith(`${root}/`) && resolved !== `${root}/`).toBe(true);
          expect(resolved.split('/')).not.toContain('..');
        } catch (e) {
          expect((e as Error).message).toMatch(/^path /);
        }
      }),
      directParams,
    );
  });
});

describe(`a live session (${LIVE_RUNS} cases per kind)`, () => {
  let h: Harness;
  let handle: WorkflowHandle;
  beforeAll(async () => {
    h = await startHarness();
    // No sandboxes: every file copy is refused, schema-valid or not, so nothing waits for a hands host.
    handle = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {} } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  const lastSeq = async () => (await allEvents(handle)).at(-1)!.seq;
  /** The turn a message started has answered. */
  const idle = () =>
    waitForEvents(handle, (ev) => ev.at(-1)!.type === 'assistant_message' || ev.at(-1)!.type === 'session_started');

  /** Sends an update by name with raw arguments; returns its result or the failure's message. */
  async function sendUpdate(
    name: string,
    args: unknown[],
  ): Promise<{ ok: true; value: unknown } | { ok: false; message: string; type?: string }> {
    try {
      return { ok: true, value: await handle.executeUpdate(name, { args: args as [unknown] }) };
    } catch (e) {
      if (!(e instanceof WorkflowUpdateFailedError)) throw e;
      const cause = e.cause as { message: string; type?: string } | undefined;
      return { ok: false, message: cause?.message ?? e.message, type: cause?.type };
    }
  }

  afterEach(async () => {
    expect(await failedWorkflowTasks(handle)).toEqual([]);
  });

  it('sendMessage: rejects each bad message with an error naming the field and appends nothing; appends each good one once', async () => {
    const seen = new Map<string, number>();
    for (const raw of liveSample(fc.oneof(message, fc.constant(undefined)))) {
      const received = overTheWire(raw);
      const expected = UserMessageSchema.safeParse(received);
      const before = await lastSeq();
      const r = await sendUpdate('sendMessage', raw === undefined ? [] : [raw]);
      if (!expected.success) {
        expect(r).toEqual({
          ok: false,
          message: formatRefusal('invalid message', expected.error),
          type: 'SessionError.InvalidMessage',
        });
        expect(await lastSeq()).toBe(before);
        continue;
      }
      const dup = expected.data.messageId !== undefined ? seen.get(expected.data.messageId) : undefined;
      expect(r).toEqual({ ok: true, value: { seq: dup ?? before + 1 } });
      if (dup === undefined) {
        if (expected.data.messageId !== undefined) seen.set(expected.data.messageId, before + 1);
        const events = await idle();
        expect(events.find((e) => e.seq === before + 1)).toMatchObject({
          type: 'user_message',
          text: expected.data.text,
        });
      } else expect(await lastSeq()).toBe(before);
    }
  });

  it('putFile and getFile: every request is refused with a clear error and nothing is appended', async () => {
    const before = await lastSeq();
    for (const [name, arb, schema] of [
      ['putFile', putFile, PutFileSchema],
      ['getFile', getFile, GetFileSchema],
    ] as const) {
      for (const raw of liveSample(fc.oneof(arb as fc.Arbitrary<unknown>, hostileJson))) {
        const expected = schema.safeParse(overTheWire(raw));
        const r = await sendUpdate(name, [raw]);
        if (expected.success)
          expect(r).toEqual({
            ok: false,
            message: expect.stringMatching(/^no sandbox named /),
            type: 'FilesError.UnknownSandbox',
          });
        else
          expect(r).toEqual({
            ok: false,
            message: formatRefusal(`invalid ${name}`, expected.error),
            type: 'FilesError.Invalid',
          });
      }
    }
    expect(await lastSeq()).toBe(before);
  });

  it('resolveToolUse and submitToolResult: with nothing pending, every request is refused with a clear error and nothing is appended', async () => {
    const before = await lastSeq();
    for (const [name, arb, schema, family] of [
      ['resolveToolUse', resolve, ResolveToolUseSchema, 'ApprovalError'],
      ['submitToolResult', submit, SubmitToolResultSchema, 'ClientToolError'],
    ] as const) {
      for (const raw of liveSample(fc.oneof(arb as fc.Arbitrary<unknown>, hostileJson))) {
        const expected = schema.safeParse(overTheWire(raw));
        const r = await sendUpdate(name, [raw]);
        if (expected.success)
          expect(r).toEqual({
            ok: false,
            message: expect.stringMatching(/^no (approval is pending for tool use|client tool call) /),
            type: `${family}.Unknown`,
          });
        else
          expect(r).toEqual({
            ok: false,
            message: formatRefusal(`invalid ${name}`, expected.error),
            type: `${family}.Invalid`,
          });
      }
    }
    expect(await lastSeq()).toBe(before);
  });

  it('events query: answers good arguments with the right slice and refuses bad ones', async () => {
    const last = await lastSeq();
    for (const raw of liveSample(eventsArgs)) {
      const expected = EventsQueryArgsSchema.safeParse(overTheWire(raw) ?? {});
      const r = await handle
        .query<{ events: { seq: number }[] }, unknown[]>('events', ...(raw === undefined ? [] : [raw]))
        .then(
          (page) => ({ ok: true as const, page }),
          (e: Error) => ({ ok: false as const, message: e.message }),
        );
      if (expected.success) {
        if (!r.ok) throw new Error(`query refused ${JSON.stringify(raw)}: ${r.message}`);
        const want = Math.max(0, Math.min(expected.data.limit, last + 1 - expected.data.from));
        expect(r.page.events.map((e) => e.seq)).toEqual(Array.from({ length: want }, (_, i) => expected.data.from + i));
      } else {
        if (r.ok) throw new Error(`query answered ${JSON.stringify(raw)}`);
        // The refusal reads as the field and the rule it broke, to any client: a query's failure is not encoded.
        expect(r.message).toBe(formatRefusal('invalid events query', expected.error));
      }
    }
  });

  it('userMessage, interrupt: a bad signal is dropped and appends nothing; good messages are appended in order', async () => {
    const before = await lastSeq();
    const seenIds = new Set(
      (await allEvents(handle)).flatMap((e) => (e.type === 'user_message' && e.messageId ? [e.messageId] : [])),
    );
    const interrupts = liveSample(reason, LIVE_RUNS, 1);
    for (const raw of interrupts) await handle.signal('interrupt', ...(raw === undefined ? [] : [raw]));
    expect(await lastSeq()).toBe(before);

    const messages = liveSample(message, LIVE_RUNS, 2);
    const want: string[] = [];
    for (const raw of messages) {
      const r = UserMessageSchema.safeParse(overTheWire(raw));
      if (!r.success) continue;
      if (r.data.messageId !== undefined) {
        if (seenIds.has(r.data.messageId)) continue;
        seenIds.add(r.data.messageId);
      }
      want.push(r.data.text);
    }
    expect(want.length).toBeGreaterThan(0);
    expect(want.length).toBeLessThan(messages.length);
    for (const raw of messages) await handle.signal('userMessage', raw);
    const events = await waitForEvents(
      handle,
      (ev) =>
        ev.filter((e) => e.seq > before && e.type === 'user_message').length >= want.length &&
        ev.at(-1)!.type === 'assistant_message',
    );
    expect(
      events
        .filter((e) => e.seq > before && e.type === 'user_message')
        .map((e) => (e.type === 'user_message' ? e.text : '')),
    ).toEqual(want);
  });

  it('end: any argument ends the session with its reason or the default, and never fails a task', async () => {
    const reasons = liveSample(reason, LIVE_RUNS, 3);
    const ends = await inBatches(reasons, 10, async (raw) => {
      const s = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {} } });
      await s.signal('end', ...(raw === undefined ? [] : [raw]));
      const result = (await s.result()) as { reason: string };
      return { result, failed: await failedWorkflowTasks(s), raw };
    });
    for (const { result, failed, raw } of ends) {
      const r = ReasonSchema.safeParse(overTheWire(raw) ?? {});
      expect(result.reason).toBe((r.success && r.data.reason) || 'ended by user');
      expect(failed).toEqual([]);
    }
  });
});
