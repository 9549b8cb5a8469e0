// Client-side tools: the session offers them to the model, waits in requires_action, and takes the calling
// application's answer by the submitToolResult update (here through the library function and the `agents` CLI).
import type { EventOf } from '../src/session/events';
import { submitToolResult, SessionOpError } from '../src/session-ops';
import { endSignal, statusQuery, sendMessageUpdate, submitToolResultUpdate } from '../src/session/contract';
import { expectOneLineError, runAgents } from './helpers/cli';
import { allEvents, startHarness, startSession, waitForEvents, type Harness } from './helpers/env';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const agents = (args: string[]) => runAgents(h.env.address, args);

const formTool = {
  name: 'ask_user_form',
  description: 'Shows the user a form and returns their answers as JSON.',
  input_schema: { type: 'object' as const, properties: { question: { type: 'string' } }, required: ['question'] },
};

async function pendingCall(handle: Awaited<ReturnType<typeof startSession>>) {
  for (let i = 0; i < 600; i++) {
    const s = await handle.query(statusQuery);
    if (s.state === 'requires_action') return s;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the session never required action');
}

describe('client-side tools', () => {
  it('round trip: the model calls the tool, the client answers, the answer reaches the model; a duplicate is refused', async () => {
    const handle = await startSession(h, {
      agent: { tools: ['session_events'], sandboxes: {}, clientTools: [formTool] },
    });
    const id = handle.workflowId;
    h.mock.script(id, {
      steps: [
        {
          reply: {
            content: [
              { type: 'text', text: 'Asking.' },
              { type: 'tool_use', name: 'ask_user_form', input: { question: 'Which colour?' } },
            ],
          },
        },
      ],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'ask me for a colour' }] });
    const status = await pendingCall(handle);
    const [call] = status.pending!;
    expect(call).toEqual({
      kind: 'client_tool',
      toolUseId: expect.any(String),
      name: 'ask_user_form',
      input: { question: 'Which colour?' },
    });
    // The model was offered the tool as declared.
    expect(h.mock.requests(id)[0].body.tools).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'ask_user_form',
          description: formTool.description,
          input_schema: formTool.input_schema,
        }),
      ]),
    );
    expect((await agents(['status', id])).stdout).toMatch(
      new RegExp(`pending client tool ${call.toolUseId}: ask_user_form \\{"question":"Which colour\\?"\\}`),
    );

    const submitted = await agents(['submit', id, call.toolUseId, '--output', '{"colour":"teal"}', '--json']);
    expect(submitted.code).toBe(0);
    const { seq } = JSON.parse(submitted.stdout) as { seq: number };
    const events = await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message' && e.seq > seq));
    expect(events[seq]).toMatchObject({
      type: 'tool_result',
      toolUseId: call.toolUseId,
      output: '{"colour":"teal"}',
      isError: false,
    });
    const last = h.mock.requests(id).at(-1)!.body.messages as { role: string; content: Record<string, unknown>[] }[];
    expect(last.at(-1)!.content).toEqual([
      expect.objectContaining({ type: 'tool_result', tool_use_id: call.toolUseId, content: '{"colour":"teal"}' }),
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'assistant_message',
      content: [{ type: 'text', text: expect.stringContaining('teal') }],
    });
    expect((await handle.query(statusQuery)).state).toBe('waiting_for_user');

    // A duplicate (CLI and library), an unknown id and bad input are refused and append nothing.
    const before = (await allEvents(handle)).length;
    expectOneLineError(
      await agents(['submit', id, call.toolUseId, '--output', 'again']),
      new RegExp(`tool use ${call.toolUseId} already has a result \\(event ${seq}\\)`),
    );
    await expect(submitToolResult(h.env.client, id, { toolUseId: call.toolUseId, output: 'again' })).rejects.toThrow(
      SessionOpError,
    );
    expectOneLineError(
      await agents(['submit', id, 'toolu_unknown', '--output', 'x']),
      /no client tool call toolu_unknown is waiting for a result/,
    );
    expectOneLineError(await agents(['submit', id, call.toolUseId]), /give exactly one of --output and --output-file/);
    const bad = await handle
      .executeUpdate(submitToolResultUpdate, { args: [{ toolUseId: call.toolUseId, output: 42 } as never] })
      .catch((e: Error & { cause?: Error }) => e.cause?.message);
    expect(bad).toMatch(/invalid submitToolResult: output: output must be a string/);
    expect(await allEvents(handle)).toHaveLength(before);
    await handle.signal(endSignal, {});
    await handle.result();
  });

  it('reports a failed client tool as an error result, refuses a late answer, and never asks the client about invalid input', async () => {
    const handle = await startSession(h, { agent: { tools: [], sandboxes: {}, clientTools: [formTool] } });
    const id = handle.workflowId;
    const call = (input: Record<string, unknown>) => ({
      reply: { content: [{ type: 'tool_use' as const, name: 'ask_user_form', input }] },
    });
    h.mock.script(id, {
      steps: [
        call({}),
        call({ question: 'one' }),
        { reply: { content: [{ type: 'text', text: 'ok' }] } },
        call({ question: 'two' }),
      ],
    });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'go' }] });
    const { pending } = await pendingCall(handle);
    let events = await allEvents(handle);
    // The call without its required field got an error without waiting on the client.
    const first = events.find((e): e is EventOf<'tool_use'> => e.type === 'tool_use')!;
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({
      toolUseId: first.id,
      isError: true,
      output: 'invalid input for ask_user_form: missing question',
    });
    expect(pending).toEqual([expect.objectContaining({ input: { question: 'one' } })]);

    await submitToolResult(h.env.client, id, {
      toolUseId: pending![0].toolUseId,
      output: 'the form was closed',
      isError: true,
    });
    events = await waitForEvents(handle, (ev) =>
      ev.some((e) => e.type === 'assistant_message' && e.stopReason === 'end_turn'),
    );
    expect(events.find((e) => e.type === 'tool_result' && e.toolUseId === pending![0].toolUseId)).toMatchObject({
      isError: true,
      error: { kind: 'tool', message: 'the form was closed' },
    });

    // An interrupted call is closed; the client's answer that comes after is refused.
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'again' }] });
    const second = (await pendingCall(handle)).pending![0];
    await agents(['interrupt', id, '--reason', 'user left']);
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
    const late = await agents(['submit', id, second.toolUseId, '--output', 'too late']);
    expectOneLineError(late, new RegExp(`tool use ${second.toolUseId} already has a result`));
    await handle.signal(endSignal, {});
    await handle.result();
  });
});
