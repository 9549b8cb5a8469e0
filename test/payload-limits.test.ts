// Payload limits: a tool output or user message too big for the model never breaks a session. The model gets
// a head and a tail; the whole stays reachable by reference (a file in the sandbox, an event in the log).
import { sendMessageUpdate } from '../src/session/contract';
import { MAX_TOOL_OUTPUT_CHARS } from '../src/tools/kind';
import { MODEL_TEXT_LIMIT } from '../src/session/context-builder';
import { allEvents, say, startHarness, startSession, turnDone, waitForEvents, type Harness } from './helpers/env';
import { bash } from './helpers/hands';

let h: Harness;
const HOST = `test-payload-${process.pid}`;
beforeAll(async () => {
  h = await startHarness({ role: 'all', hostId: HOST });
});
afterAll(async () => {
  await h?.stop();
});

const TEN_MB = 10 * 1024 * 1024;

describe('payload limits', () => {
  it('keeps a 10 MB tool output whole in the sandbox and gives the model its head and tail', async () => {
    const handle = await startSession(h);
    const result = await bash(h, handle, `head -c ${TEN_MB} /dev/zero | tr '\\0' a; echo; echo THE-END`);
    expect(result.isError).toBe(false);
    expect(result.output.length).toBeLessThan(MAX_TOOL_OUTPUT_CHARS + 500);
    // Compared without the runs of `a`, so a failure prints something readable.
    expect(result.output.replace(/a{100,}/g, 'A')).toMatch(
      /^A\n\[output truncated: \d+ of 10485769 bytes omitted; the whole output is in \/home\/agent\/\.tool-output\/\S+\.txt\]\nA\nTHE-END\n\[exit 0\]$/,
    );
    expect(result.outputRef).toEqual({
      sandbox: 'main',
      path: expect.stringMatching(/^\/home\/agent\/\.tool-output\/.+\.txt$/),
      bytes: TEN_MB + 9,
    });
    // The model reads the whole output back through the reference, and the session goes on.
    const check = await bash(h, handle, `wc -c < ${result.outputRef!.path}; tail -c 8 ${result.outputRef!.path}`);
    expect(check.output).toBe(`${TEN_MB + 9}\nTHE-END\n[exit 0]`);
    const events = await say(handle, 'still there?');
    expect(events.at(-1)).toMatchObject({
      type: 'assistant_message',
      content: [{ type: 'text', text: 'You said: still there?' }],
    });
  });

  it('keeps a 1 MB user message whole in the log and sends the model a head and a tail that point at it', async () => {
    const handle = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {} } });
    const text = `${'x'.repeat(500_000)}MIDDLE${'y'.repeat(500_000)}`;
    const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text }] });
    const events = await waitForEvents(handle, turnDone(seq));
    expect(events.find((e) => e.seq === seq)).toMatchObject({ type: 'user_message', text });
    const req = h.mock.requests(handle.workflowId).pop()!.body as { messages: { content: { text: string }[] }[] };
    const sent = req.messages[0].content[0].text;
    expect(sent.length).toBeLessThan(MODEL_TEXT_LIMIT + 200);
    expect(sent).not.toContain('MIDDLE');
    expect(sent).toContain(`event ${seq} of the session log holds the whole text`);
    expect((await allEvents(handle)).at(-1)?.type).toBe('assistant_message');
  });
});
