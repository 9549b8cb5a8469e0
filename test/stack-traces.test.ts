// BRAIN_WORKFLOW_STACK_TRACES: the SDK's per-promise stack recording (the Web UI's Stack Trace tab) runs only in a
// brain started with it on (patches/@temporalio+worker+1.24.0.patch). The brains here are `agents worker` processes:
// the workflow threads read the setting from their process's environment.
import { loadConfig, ConfigError } from '../src/config';
import { spawnBrainWorker, type ChildWorker } from './helpers/child-worker';
import { say, startHarness, startSession, type Harness } from './helpers/env';

let h: Harness;
let brain: ChildWorker | undefined;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await brain?.kill();
  await h?.stop();
});

const spawnBrain = (extra: Record<string, string | undefined>) =>
  spawnBrainWorker(h, { BRAIN_WORKFLOW_STACK_TRACES: undefined, ...extra });

describe('workflow stack traces', () => {
  it('are off by default and on with BRAIN_WORKFLOW_STACK_TRACES=on; a session carries on from one brain to the other', async () => {
    brain = await spawnBrain({});
    const handle = await startSession(h);
    await say(handle, 'hello');
    const off = await handle.query('__stack_trace').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(off).toBeInstanceOf(Error);
    // The worker refuses the query ("Workflow stack traces are not enabled on this worker", encrypted by the codec
    // like every failure; the client reports it as a query it cannot answer).
    expect((off as Error).name).toBe('QueryNotRegisteredError');
    await brain.kill('SIGTERM');

    // A brain started with it on takes the session over: the query shows where the workflow waits.
    brain = await spawnBrain({ BRAIN_WORKFLOW_STACK_TRACES: 'on' });
    const events = await say(handle, 'again');
    expect(events.filter((e) => e.type === 'assistant_message')).toHaveLength(2);
    const stack = await handle.query<string>('__stack_trace');
    expect(stack).toMatch(/src\/workflows\/session\.ts/);
  }, 180_000);

  it('refuses any value but on or off', () => {
    expect(() => loadConfig({ BRAIN_WORKFLOW_STACK_TRACES: 'yes' })).toThrow(ConfigError);
    expect(loadConfig({}).BRAIN_WORKFLOW_STACK_TRACES).toBe('off');
  });
});
