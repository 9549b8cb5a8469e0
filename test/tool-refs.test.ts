// A model call sends the platform's own tool specs by reference: the worker expands each one back to the very spec
// the run offers, any other spec travels whole, and the call's input in history is a fraction of the specs' size.
import { temporal } from '@temporalio/proto';
import { sendMessageUpdate } from '../src/session/contract';
import type { SessionEvent } from '../src/session/events';
import type { ToolSpec } from '../src/tools/kind';
import { buildToolSpecs } from '../src/tools/offer';
import { TOOL_SPECS } from '../src/tools/registry';
import { compactToolSpecs, expandToolSpecs, UnknownToolRefError, type ToolRef } from '../src/tools/tool-refs';
import { webFetchSpec } from '../src/tools/web-fetch';
import { startHarness, startSession, testAgent, waitForEvents, type Harness } from './helpers/env';

jest.setTimeout(120_000);

const clientTool: ToolSpec = {
  name: 'lookup_order',
  description: 'Looks an order up.',
  input_schema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
};

describe('tool spec references', () => {
  it('gives back every spec exactly, and sends only the platform’s own by reference', () => {
    const specs: ToolSpec[] = [
      ...buildToolSpecs(testAgent()),
      // Under another name, with a note added to the description (as a sandbox binding or a roster adds one).
      {
        ...TOOL_SPECS.bash,
        name: 'bash_other',
        description: `${TOOL_SPECS.bash.description} Runs in the sandbox "b".`,
      },
      webFetchSpec,
      clientTool,
      // The same schema as a platform spec but a description of its own: not the platform's.
      { ...TOOL_SPECS.read, name: 'my_read', description: 'Reads.' },
      // A key the platform's specs do not have: sent whole.
      { ...TOOL_SPECS.glob, cache_control: { type: 'ephemeral' } } as unknown as ToolSpec,
      // A spec whole that happens to carry a `ref` key is still a spec.
      { ...clientTool, name: 'odd', ref: 'bash' } as unknown as ToolSpec,
    ];
    const wire = compactToolSpecs(specs);
    expect(JSON.stringify(expandToolSpecs(wire))).toBe(JSON.stringify(specs));
    const refs = wire.filter((w): w is ToolRef => !('input_schema' in w));
    const own = buildToolSpecs(testAgent()).length;
    expect(refs.map((r) => r.name)).toEqual([
      ...buildToolSpecs(testAgent()).map((s) => s.name),
      'bash_other',
      'web_fetch',
    ]);
    expect(refs[own]).toEqual({
      ref: 'bash',
      name: 'bash_other',
      suffix: ' Runs in the sandbox "b".',
      digest: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    // Each expanded spec is a copy: nothing done to it reaches the registry.
    const [bash] = expandToolSpecs([refs[0]]);
    expect(bash.input_schema).toEqual(TOOL_SPECS.bash.input_schema);
    expect(bash.input_schema).not.toBe(TOOL_SPECS.bash.input_schema);
    expect(wire.slice(own + 2)).toEqual(specs.slice(own + 2));
    // The default toolset by reference is a small fraction of it whole.
    const defaults = buildToolSpecs(testAgent());
    expect(JSON.stringify(compactToolSpecs(defaults)).length).toBeLessThan(JSON.stringify(defaults).length / 5);
  });

  it('refuses a reference its code does not know, or knows as another spec', () => {
    const [ref] = compactToolSpecs([TOOL_SPECS.bash]) as ToolRef[];
    expect(() => expandToolSpecs([{ ...ref, ref: 'teleport' }])).toThrow(UnknownToolRefError);
    // The digest of the spec in the sending code: a worker with another description or schema under the name refuses it.
    expect(() => expandToolSpecs([{ ...ref, digest: '0000000000000000' }])).toThrow(
      /no tool spec "bash" as the session offers it/,
    );
  });
});

describe('a session’s model calls', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.stop());

  it('reach the model with the whole specs, and write references to history', async () => {
    const agent = { promptCaching: false, clientTools: [clientTool] };
    const handle = await startSession(h, { agent });
    h.mock.script(handle.workflowId, { steps: [{ reply: { content: [{ type: 'text', text: 'Done.' }] } }] });
    await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'Hello.' }] });
    await waitForEvents(handle, (ev: SessionEvent[]) => ev.some((e) => e.type === 'assistant_message'));
    const offered = buildToolSpecs(testAgent(agent));
    const [request] = h.mock.requests(handle.workflowId);
    expect(request.body.tools).toEqual(JSON.parse(JSON.stringify(offered)));
    const E = temporal.api.enums.v1.EventType;
    const scheduled = ((await handle.fetchHistory()).events ?? [])
      .filter((e) => e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes!);
    const calls = scheduled.filter((a) => a.activityType?.name === 'callModelToolRefs');
    expect(calls).toHaveLength(1);
    expect(scheduled.filter((a) => a.activityType?.name === 'callModel')).toHaveLength(0);
    // The input (sealed by the history's codec) is smaller than the specs it stands for.
    const input = calls[0].input!.payloads![0].data!;
    expect(input.length).toBeLessThan(JSON.stringify(offered).length / 2);
  });
});
