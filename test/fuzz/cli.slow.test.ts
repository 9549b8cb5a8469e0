// Hostile command lines for `agents`: every refusal is one line on stderr and a non-zero exit, every accepted
// argument is what the command needs (a valid session id, a safe non-negative integer), and a refused `send`
// appends nothing. 1,000 command lines go through the parser in process; 50 run as the real CLI.
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { ROOT, allEvents, startHarness, startSession, waitForEvents, type Harness } from '../helpers/env';
import { runAgents } from '../helpers/cli';
import { DIRECT_RUNS, LIVE_RUNS, SEED, hostileString, inBatches, liveSample } from './fuzz-helpers';

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

const COMMANDS = [
  ['start'],
  ['send'],
  ['events'],
  ['watch'],
  ['status'],
  ['list'],
  ['wake'],
  ['fork'],
  ['handoff'],
  ['interrupt'],
  ['end'],
  ['files', 'put'],
  ['files', 'get'],
  ['vault', 'put'],
  ['vault', 'list'],
  ['vault', 'rm'],
  ['worker'],
  ['model-server'],
  ['codec-server'],
];
const OPTIONS = [
  '--id',
  '--agent',
  '--system',
  '--model',
  '--json',
  '--message-id',
  '--from',
  '--limit',
  '--at',
  '--sandboxes',
  '--reason',
  '--sandbox',
  '--vault',
  '--role',
  '--port',
  '--origin',
  '--bogus',
  '-x',
  '--',
];
const number = fc.oneof(
  fc.nat().map(String),
  fc.constantFrom(
    '-1',
    '1.5',
    '1e3',
    '0x10',
    ' 7',
    '07',
    '٣',
    '',
    '99999999999999999999',
    '9007199254740993',
    'Infinity',
  ),
);
const token = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 3, arbitrary: fc.constantFrom(...OPTIONS) },
  { weight: 2, arbitrary: number },
  { weight: 1, arbitrary: fc.constantFrom('ses-1', 'a.b_c-d', 'main', 'hello') },
);
const argv = fc
  .tuple(fc.constantFrom(...COMMANDS), fc.array(token, { maxLength: 6 }))
  .map(([cmd, rest]) => [...cmd, ...rest]);

/**
 * Parses each command line with the built CLI's `buildProgram()`, every action replaced by a recorder (no
 * connection, no server, no stdin). Commander is ESM-only, which jest cannot load, so the parser runs in one
 * node process for all the command lines.
 */
const PARSER = `
const { buildProgram } = require(process.argv[1]);
const all = (c) => [c, ...c.commands.flatMap(all)];
(async () => {
  const out = [];
  for (const args of JSON.parse(require('fs').readFileSync(0, 'utf8'))) {
    const program = buildProgram();
    let stderr = '', stdout = '', ran;
    for (const c of all(program)) {
      c.exitOverride();
      c.configureOutput({ writeOut: (s) => void (stdout += s), writeErr: (s) => void (stderr += s) });
      if (c.commands.length === 0) c.action((...a) => void (ran = { command: c.name(), args: a.slice(0, -1) }));
    }
    try {
      await program.parseAsync(['node', 'agents', ...args]);
      out.push(ran ? { ok: true, ...ran } : { ok: false, exitCode: 0, stderr, stdout });
    } catch (e) {
      if (typeof e.exitCode !== 'number') throw e;
      out.push({ ok: false, exitCode: e.exitCode, stderr, stdout });
    }
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

type Parsed =
  { ok: true; command: string; args: unknown[] } | { ok: false; exitCode: number; stderr: string; stdout: string };

function parseAll(lines: string[][]): Parsed[] {
  const r = spawnSync(process.execPath, ['-e', PARSER, path.join(ROOT, 'dist/client.js')], {
    input: JSON.stringify(lines),
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`parser process failed: ${r.stderr.toString()}`);
  return JSON.parse(r.stdout.toString()) as Parsed[];
}

describe('the agents command line, in process (1,000 command lines)', () => {
  it('refuses with one line on stderr, or hands the command arguments it can use', () => {
    // Edge cases first, then generated lines: 1,000 in all.
    const edges = [
      ['events', 'ses-1', '--from', '99999999999999999999'],
      ['events', 'ses-1', '--limit', '9007199254740993'],
      ['fork', 'ses-1', '--at', '1e3'],
      ['fork', 'ses-1', '--at', '99999999999999999999'],
      ['status', 'ses-1\n'],
      ['start', '--reason', 'x'],
      ['send', 'ses-1', 'hi', 'extra'],
    ];
    const lines = [...edges, ...liveSample(argv, DIRECT_RUNS - edges.length, SEED)];
    const problems: unknown[] = [];
    for (const [i, r] of parseAll(lines).entries()) {
      const args = lines[i];
      if (!r.ok) {
        // --help prints help on stdout and exits 0; anything else is a one-line refusal.
        if (r.exitCode === 0 ? !/^Usage: /.test(r.stdout) : !/^error: [^\n]*\n$/.test(r.stderr))
          problems.push({ args, ...r });
        continue;
      }
      const [positional, opts] = [r.args.slice(0, -1), r.args.at(-1) as Record<string, unknown>];
      const ids = [
        ...(['send', 'events', 'watch', 'status', 'wake', 'fork', 'interrupt', 'end', 'put', 'get'].includes(
          r.command,
        ) && args[0] !== 'vault'
          ? [positional[0]]
          : []),
        ...(opts.id !== undefined ? [opts.id] : []),
      ];
      if (r.command === 'handoff') ids.push(positional[0], positional[2]);
      for (const id of ids) if (typeof id !== 'string' || !SESSION_ID.test(id)) problems.push({ args, id });
      for (const k of ['from', 'limit', 'at', 'port'] as const)
        if (opts[k] !== undefined && !(Number.isSafeInteger(opts[k]) && (opts[k] as number) >= 0))
          problems.push({ args, [k]: opts[k] });
    }
    expect(problems).toEqual([]);
  });
});

describe(`the agents command line as a child process (${LIVE_RUNS} command lines)`, () => {
  let h: Harness;
  let handle: WorkflowHandle;
  beforeAll(async () => {
    h = await startHarness();
    handle = await startSession(h, { agent: { tools: ['session_events'], sandboxes: {} }, message: { text: 'hello' } });
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message'));
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('refuses hostile arguments against a live session with one line on stderr, and a refused send appends nothing', async () => {
    const sid = () => fc.constant(handle.workflowId);
    const live = fc.oneof(
      fc.tuple(sid(), hostileString).map(([id, text]) => ['send', id, text]),
      fc.tuple(sid(), hostileString).map(([id, m]) => ['send', id, 'hi', '--message-id', m]),
      fc.tuple(sid(), number, number).map(([id, f, l]) => ['events', id, '--from', f, '--limit', l]),
      fc.tuple(sid(), number, hostileString).map(([id, at, nid]) => ['fork', id, '--at', at, '--id', nid]),
      fc.tuple(sid(), hostileString).map(([id, p]) => ['files', 'get', id, p, '/dev/null']),
      hostileString.map((id) => ['status', id]),
      hostileString.map((id) => ['interrupt', id, '--reason', 'x']),
      argv,
    );
    // A NUL cannot be passed in argv at all.
    const cases = liveSample(
      live.filter((a) => a.every((t) => !t.includes('\0'))),
      LIVE_RUNS,
      SEED,
    );
    const sends = cases.filter((a) => a[0] === 'send');
    const others = cases.filter((a) => a[0] !== 'send');

    // Sends one at a time, so the log can be compared around each refusal.
    for (const args of sends) {
      const before = (await allEvents(handle)).length;
      const r = await runAgents(h.env.address, args);
      if (r.code === 0) {
        expect(r.stdout).toMatch(/^\d+\n$/);
        await waitForEvents(handle, (ev) => ev.at(-1)!.type === 'assistant_message' && ev.length > before);
        continue;
      }
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^error: [^\n]*\n$/);
      expect((await allEvents(handle)).length).toBe(before);
    }
    // A number past what a query can carry is refused by the CLI itself, naming the option.
    const huge = await runAgents(h.env.address, ['events', handle.workflowId, '--from', '99999999999999999999']);
    expect(huge).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        /^error: option '--from <n>' argument '99999999999999999999' is invalid\. must be a non-negative integer up to 9007199254740991\n$/,
      ),
    });
    // Commander's suggestion joins its error on the one line.
    const typo = await runAgents(h.env.address, ['events', handle.workflowId, '--limt', '3']);
    expect(typo).toEqual({ code: 1, stdout: '', stderr: "error: unknown option '--limt' (Did you mean --limit?)\n" });
    const runs = await inBatches(others, 5, (args) => runAgents(h.env.address, args));
    for (const [i, r] of runs.entries()) {
      const what = { args: others[i], code: r.code, stderr: r.stderr };
      if (r.code === 0) continue;
      expect({ ...what, oneLine: /^error: [^\n]*\n$/.test(r.stderr), stdout: r.stdout }).toEqual({
        ...what,
        oneLine: true,
        stdout: '',
      });
    }
    // Some fifty child processes of the CLI, each a Node start: minutes on a loaded 2-core machine.
  }, 300_000);
});
