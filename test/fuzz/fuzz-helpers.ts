// Shared pieces of the fuzz suites: the fixed seed, hostile values, and the checks every live sample ends with.
import fc from 'fast-check';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** Every fuzz suite runs with this seed, so a failure reproduces. */
export const SEED = 20261129;
/** Cases per input kind against the validators and parsers, in process. */
export const DIRECT_RUNS = 1000;
/** Cases per input kind sent through a live session. */
export const LIVE_RUNS = 50;

export const directParams = { seed: SEED, numRuns: DIRECT_RUNS } as const;

/** `n` values of `arb`, the same on every run. */
export function liveSample<T>(arb: fc.Arbitrary<T>, n = LIVE_RUNS, seed = SEED): T[] {
  return fc.sample(arb, { seed, numRuns: n });
}

/** Strings chosen to hurt: empty, blank, control characters, lone surrogates, bidi overrides, escapes, traversal. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) }),
  fc.constantFrom(
    '',
    ' ',
    '\n\t\r ',
    '\u0000',
    '\u0000hello',
    '\ud800',
    '\udfff\ud800',
    '\u202eevil',
    '\u001b[31mred\u001b[0m',
    '../../etc/passwd',
    '/workspace/../etc/shadow',
    '/workspace',
    '/workspace/./a/../../b',
    'a'.repeat(4097),
    '-1',
    '1e3',
    '0x10',
    'NaN',
    '--help',
    '$(id)',
    '`id`',
    '%s%n',
    'null',
    '{}',
    '__proto__',
    'constructor',
  ),
);

/** Any JSON value, leaning on hostile strings; what a client can put in a payload. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** An object with the given keys (each maybe absent) holding hostile or plausible values, plus maybe a stray key. */
export function shaped(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const withHostile = Object.fromEntries(Object.entries(fields).map(([k, a]) => [k, fc.oneof(a, hostileJson)]));
  return fc
    .tuple(
      fc.record(withHostile, { requiredKeys: [] }),
      fc.option(fc.tuple(hostileString, hostileJson), { nil: undefined }),
    )
    .map(([rec, extra]) => (extra ? { ...rec, [extra[0]]: extra[1] } : rec));
}

/** What a workflow receives for a value a client sends: Temporal's JSON payload converter. */
export function overTheWire(v: unknown): unknown {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}

const WFT_FAILED = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;

/** The causes of every failed workflow task in the run's history (none is what a hostile input must leave). */
export async function failedWorkflowTasks(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === WFT_FAILED)
    .map(
      (e) => `${e.workflowTaskFailedEventAttributes?.cause}: ${e.workflowTaskFailedEventAttributes?.failure?.message}`,
    );
}

/** Runs `fn` over `items`, `width` at a time, in order of start. */
export async function inBatches<T, R>(items: T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}
