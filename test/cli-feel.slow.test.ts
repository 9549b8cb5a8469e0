// How the command line feels: --json everywhere with clean stdout, examples in --help, colour and redrawing
// only on a terminal (never with NO_COLOR), progress on stderr.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { colorEnabled, progress } from '../src/host/term';
import { ROOT, startHarness, uniqueId, type Harness } from './helpers/env';
import { runAgents, type Run } from './helpers/cli';

const ESC = '\u001b[';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

/** Every leaf command of the built program and its option flags (commander is ESM-only, so a child node lists them). */
function leaves(): { path: string[]; options: string[] }[] {
  const script = `
    const { buildProgram } = require(${JSON.stringify(path.join(ROOT, 'dist/client.js'))});
    const walk = (cmd, prefix) => cmd.commands.flatMap((c) => c.commands.length ? walk(c, [...prefix, c.name()]) : [{ path: [...prefix, c.name()], options: c.options.map((o) => o.long) }]);
    process.stdout.write(JSON.stringify(walk(buildProgram(), [])));`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as {
    path: string[];
    options: string[];
  }[];
}

/** Runs `agents ARGS` with a terminal (a pty from util-linux `script`) for stdout and stderr. */
function onTerminal(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const cmd = [process.execPath, path.join(ROOT, 'dist/client.js'), ...args]
    .map((a) => `'${a.replace(/'/g, `'\\''`)}'`)
    .join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-q', '-e', '-c', cmd, '/dev/null'], {
      env: { ...process.env, TEMPORAL_ADDRESS: h.env.address, TERM: 'xterm-256color', NO_COLOR: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('command-line feel', () => {
  it('offers --json on every command and examples in every --help', async () => {
    const commands = leaves();
    expect(commands.length).toBeGreaterThanOrEqual(18);
    for (const { path: p, options } of commands)
      expect([p.join(' '), options.includes('--json')]).toEqual([p.join(' '), true]);
    const helps = await Promise.all(commands.map(({ path: p }) => runAgents(h.env.address, [...p, '--help'])));
    helps.forEach((r, i) => {
      const name = commands[i].path.join(' ');
      expect([name, r.code]).toEqual([name, 0]);
      expect(r.stdout).toMatch(new RegExp(`\\nExamples:\\n  \\$ [^\\n]*agents ${name}\\b`));
      expect(r.stdout).not.toContain(ESC);
    });
    const top = await runAgents(h.env.address, ['--help']);
    expect(top.stdout).toContain('--json on every command');
    expect(top.stdout).toMatch(/Examples:\n {2}\$ agents dev/);
  });

  it('keeps stdout to parseable JSON while progress and streamed tokens go to stderr', async () => {
    const id = uniqueId('feel-json');
    // Slow enough that `--wait` has found the streaming worker before the first token, even on a loaded machine.
    h.mock.script(id, { firstByteDelayMs: 1500, chunkDelayMs: 150 });
    const start = await runAgents(h.env.address, ['start', '--id', id, '--json', '--wait', 'hello there friend']);
    expect(start.code).toBe(0);
    expect(JSON.parse(start.stdout)).toEqual({ sessionId: id });
    // --wait followed the first turn on stderr: the live reply, then its event from the log.
    expect(start.stderr).toContain('… model: You said: hello there friend');
    expect(start.stderr).toMatch(/#2 assistant_message: You said: hello there friend/);
    expect(start.stderr).not.toContain(ESC);

    const runs: [string[], (o: unknown) => void][] = [
      [['send', id, 'again', '--json'], (o) => expect(o).toEqual({ seq: 3 })],
      [['status', id, '--json'], (o) => expect(o).toMatchObject({ lastSeq: expect.any(Number) })],
      [['events', id, '--json', '--limit', '2'], (o) => expect(o).toMatchObject({ seq: expect.any(Number) })],
      [['end', id, '--json', '--reason', 'done'], (o) => expect(o).toEqual({ sessionId: id, sent: 'end' })],
      [['watch', id, '--json'], (o) => expect(o).toHaveProperty('type')],
      [['vault', 'list', '--json'], () => undefined],
    ];
    for (const [args, check] of runs) {
      const r = await runAgents(h.env.address, args);
      expect([args.join(' '), r.code]).toEqual([args.join(' '), 0]);
      for (const line of r.stdout.split('\n').filter(Boolean)) check(JSON.parse(line));
      expect(r.stdout + r.stderr).not.toContain(ESC);
    }
    const error = await runAgents('127.0.0.1:1', ['status', id, '--json']);
    expect(error.code).not.toBe(0);
    expect(error.stdout).toBe('');
    expect(error.stderr).toMatch(/^error: cannot reach Temporal/);
  });

  it('colours and redraws only on a terminal, and never colours with NO_COLOR', async () => {
    const id = uniqueId('feel-tty');
    // Slow enough that `--wait` has found the streaming worker before the first token, even on a loaded machine.
    h.mock.script(id, { firstByteDelayMs: 1500, chunkDelayMs: 150 });
    const tty = await onTerminal(['start', '--id', id, '--wait', 'one two three four five']);
    expect(tty.code).toBe(0);
    // The streamed reply is drawn dimmed, then erased in place and replaced by the event from the log.
    expect(tty.stdout).toContain(`${ESC}2m`);
    expect(tty.stdout).toContain(`${ESC}J`);
    expect(tty.stdout).toMatch(/#2 assistant_message: You said: one two three four five/);
    const coloured = await onTerminal(['status', 'no-such-session']);
    expect(coloured.stdout).toContain(`${ESC}31merror:${ESC}39m unknown session no-such-session`);
    const plain = await onTerminal(['status', 'no-such-session'], { NO_COLOR: '1' });
    expect(plain.stdout).toMatch(/^error: unknown session no-such-session/);
    expect(plain.stdout).not.toContain(ESC);
    await h.env.client.workflow.getHandle(id).terminate('test over');
  });

  it('draws progress in place on a terminal and as plain lines elsewhere', () => {
    const capture = (isTTY: boolean) => {
      let text = '';
      return { stream: { isTTY, write: (s: string) => ((text += s), true) }, text: () => text };
    };
    const pipe = capture(false);
    const p1 = progress('building the sandbox image', pipe.stream, {});
    p1.log('debootstrap ...');
    p1.done('built the sandbox image');
    expect(pipe.text()).toMatch(/^debootstrap \.\.\.\nbuilt the sandbox image \(\d+\.\d s\)\n$/);
    const term = capture(true);
    const p2 = progress('building the sandbox image', term.stream, { TERM: 'xterm' });
    p2.log('debootstrap ...');
    p2.done();
    expect(term.text()).toContain('building the sandbox image');
    expect(term.text()).toContain('\r\u001b[K');
    expect(term.text()).toContain(`${ESC}32m✓${ESC}39m`);
    const noColour = capture(true);
    progress('x', noColour.stream, { TERM: 'xterm', NO_COLOR: '1' }).fail();
    expect(noColour.text()).not.toMatch(new RegExp(`${String.fromCharCode(27)}\\[\\d+m`));
    expect(colorEnabled({ isTTY: true, write: () => true }, { NO_COLOR: '1' })).toBe(false);
    expect(colorEnabled({ isTTY: true, write: () => true }, { TERM: 'dumb' })).toBe(false);
    expect(colorEnabled({ isTTY: false, write: () => true }, {})).toBe(false);
  });
});
