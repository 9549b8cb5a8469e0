// Hostile tool output: invalid UTF-8, control characters and ANSI escapes, from the real bash tool in a real
// Docker sandbox. The output reaches the log and the model as a well-formed string (invalid bytes become
// U+FFFD, everything else is kept), and no workflow task fails. The 10 MB case is in test/payload-limits.test.ts.
import fc from 'fast-check';
import { formatBashOutput } from '../../src/hands/hands-activities';
import { parseWrapperOutput } from '../../src/sandbox/docker';
import { sendMessageUpdate } from '../../src/session/contract';
import { conversationOf, startHarness, startSession, turnDone, waitForEvents, type Harness } from '../helpers/env';
import { LIVE_RUNS, SEED, directParams, failedWorkflowTasks, liveSample } from './fuzz-helpers';

const ESC = 0x1b;
const bytesOf = (s: string) => [...Buffer.from(s, 'latin1')];
/** Bytes that are not UTF-8: stray continuation bytes, truncated sequences, overlongs, surrogates, 0xFE/0xFF. */
const invalidUtf8 = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0x80, max: 0xff }).map((b) => [b]),
      fc.constantFrom(
        [0xc0, 0x80],
        [0xe0, 0x80],
        [0xed, 0xa0, 0x80],
        [0xf4, 0x90, 0x80, 0x80],
        [0xe2, 0x82],
        [0xf0, 0x9f, 0x98],
        [0xfe],
        [0xff],
      ),
      fc.string({ unit: 'grapheme', maxLength: 3 }).map((s) => [...Buffer.from(s, 'utf8')]),
    ),
    { minLength: 1, maxLength: 12 },
  )
  .map((parts) => parts.flat());
/** C0 controls (NUL, BEL, BS, CR, VT, FF, ...), DEL and C1 controls, among ordinary text. */
const controlChars = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0, max: 0x1f }).map((b) => [b]),
      fc.constant([0x7f]),
      fc.integer({ min: 0x80, max: 0x9f }).map((c) => [...Buffer.from(String.fromCharCode(c), 'utf8')]),
      fc.constantFrom(...'abc xyz'.split('')).map(bytesOf),
    ),
    {
      minLength: 1,
      maxLength: 24,
    },
  )
  .map((parts) => parts.flat());
/** ANSI and terminal escapes: colours, cursor moves, screen clears, OSC titles and hyperlinks, broken ones. */
const ansiEscapes = fc
  .array(
    fc.oneof(
      fc
        .tuple(fc.array(fc.nat({ max: 255 }), { maxLength: 3 }), fc.constantFrom('m', 'H', 'J', 'K', 'A', 'h', 'l'))
        .map(([ps, f]) => [ESC, ...bytesOf(`[${ps.join(';')}${f}`)]),
      fc.string({ maxLength: 8 }).map((t) => [ESC, ...bytesOf(']0;'), ...Buffer.from(t, 'utf8'), 0x07]),
      fc.constant([ESC, ...bytesOf(']8;;http://x.test\x1b\\link'), ESC, ...bytesOf(']8;;'), ESC, 0x5c]),
      fc.constantFrom([ESC, 0x63], [ESC], [ESC, 0x5b], [0x9b, 0x33, 0x31, 0x6d], [ESC, ...bytesOf('[?1049h')]),
      fc.string({ maxLength: 4 }).map((t) => [...Buffer.from(t, 'utf8')]),
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map((parts) => parts.flat());

/** The octal printf that writes exactly these bytes. */
const printfOf = (bytes: number[]) => `printf '${bytes.map((b) => `\\${b.toString(8).padStart(3, '0')}`).join('')}'`;
/** What the tool_result must say for a command that wrote `bytes` and exited 0. */
const expected = (bytes: number[]) => formatBashOutput(Buffer.from(bytes).toString('utf8'), 0, false, 60);

/** No lone surrogate: the string survives UTF-8 encoding unchanged. */
const wellFormed = (s: string) => Buffer.from(s, 'utf8').toString('utf8') === s;

const META = (code: number, size: number) => Buffer.from(`\n\0MA-META ${code} ${size} 0 0`);

describe('tool output parsing, in process (1,000 cases per kind)', () => {
  for (const [kind, arb] of [
    ['invalid UTF-8', invalidUtf8],
    ['control characters', controlChars],
    ['ANSI escapes', ansiEscapes],
  ] as const) {
    it(`${kind}: the wrapper's record parses to a well-formed string with the bytes decoded and the exit code`, () => {
      fc.assert(
        fc.property(arb, fc.integer({ min: 0, max: 255 }), (bytes, code) => {
          const body = Buffer.from(bytes);
          const r = parseWrapperOutput(Buffer.concat([body, META(code, body.length)]), 'k');
          expect(r).toMatchObject({ output: body.toString('utf8'), exitCode: code, outputBytes: body.length });
          const text = formatBashOutput(r!.output, r!.exitCode, r!.timedOut, 60);
          expect(wellFormed(text)).toBe(true);
          expect(text.endsWith(`[exit ${code}]`)).toBe(true);
          expect(JSON.parse(JSON.stringify(text))).toBe(text);
        }),
        directParams,
      );
    });
  }
});

describe(`tool output through a live session and a real sandbox (${LIVE_RUNS} cases per kind)`, () => {
  let h: Harness;
  const HOST = `test-fuzz-tools-${process.pid}`;
  beforeAll(async () => {
    h = await startHarness({ role: 'all', hostId: HOST });
  });
  afterAll(async () => {
    await h?.stop();
  });

  for (const [kind, arb] of [
    ['invalid UTF-8', invalidUtf8],
    ['control characters', controlChars],
    ['ANSI escapes', ansiEscapes],
  ] as const) {
    it(`${kind}: each bash result is the output decoded, in the log and in the model's next request`, async () => {
      const samples = liveSample(arb, LIVE_RUNS, SEED + kind.length);
      const handle = await startSession(h);
      // All fifty in one reply: one tool round in one sandbox.
      h.mock.script(handle.workflowId, {
        steps: [
          {
            reply: {
              content: samples.map((bytes, i) => ({
                type: 'tool_use' as const,
                id: `toolu_${i}`,
                name: 'bash',
                input: { command: printfOf(bytes) },
              })),
            },
          },
        ],
      });
      const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'print them' }] });
      const events = await waitForEvents(handle, turnDone(seq), 180_000);
      const results = events.filter((e) => e.type === 'tool_result');
      expect(
        results.map((r) => (r.type === 'tool_result' ? { id: r.toolUseId, output: r.output, isError: r.isError } : {})),
      ).toEqual(samples.map((bytes, i) => ({ id: `toolu_${i}`, output: expected(bytes), isError: false })));
      expect(events.at(-1)).toMatchObject({ type: 'assistant_message', stopReason: 'end_turn' });
      // The model got every output as sent, in a request the API accepts.
      const last = h.mock.requests(handle.workflowId).at(-1)!;
      expect(last.status).toBe(200);
      const sent = (conversationOf(last.body) as { content: { type: string; content?: unknown }[] }[])
        .at(-1)!
        .content.filter((b) => b.type === 'tool_result');
      expect(sent.map((b) => (typeof b.content === 'string' ? b.content : JSON.stringify(b.content)))).toEqual(
        samples.map(expected),
      );
      expect(await failedWorkflowTasks(handle)).toEqual([]);
    });
  }
});
