// The fault matrix, one fault per phase (`npm run faults` runs every fault at every phase and publishes
// docs/fault-matrix.md). Each cell runs the scripted session with the fault injected and checks the aftermath.
import { runCell, type Fault, type Phase } from './matrix';
import { FaultStack } from './stack';

const CELLS: [Phase, Fault][] = [
  ['waiting', 'restart_temporal'],
  ['model_in_flight', 'model_timeout'],
  ['mid_stream', 'model_drop'],
  ['tool_dispatch', 'model_429'],
  ['execute_in_flight', 'kill_sandbox'],
  ['provisioning', 'kill_hands'],
  ['handover', 'kill_brain'],
];

const stack = new FaultStack();
let baseline: string[];
beforeAll(async () => {
  await stack.start();
  const base = await runCell(stack, 'none', 'none');
  expect(base.problems).toEqual([]);
  baseline = base.shape;
}, 300_000);
afterAll(async () => {
  await stack.stop();
});

it.each(CELLS)(
  '%s: %s leaves the same session, with nothing lost, duplicated or stuck',
  async (phase, fault) => {
    const r = await runCell(stack, fault, phase, baseline);
    expect(r.problems).toEqual([]);
  },
  300_000,
);
