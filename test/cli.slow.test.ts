// The `agents` command line, run as a user runs it: a child process against a real server.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SessionEventSchema } from '../src/session/events';
import { ROOT, startHarness, waitForEvents, type Harness } from './helpers/env';
import { expectOneLineError, runAgents } from './helpers/cli';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const agents = (args: string[], env: Record<string, string> = {}) => runAgents(h.env.address, args, env);

describe('agents CLI', () => {
  it('starts a session, sends to it, and prints events, status and the list as JSON on stdout only', async () => {
    const start = await agents(['start', '--json', '--system', 'Be brief.', 'hello from the CLI']);
    expect(start.code).toBe(0);
    const { sessionId } = JSON.parse(start.stdout) as { sessionId: string };
    expect(start.stdout.trim().split('\n')).toHaveLength(1);
    const handle = h.env.client.workflow.getHandle(sessionId);
    await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'assistant_message'));

    const send = await agents(['send', sessionId, 'read the log please', '--json']);
    expect(send.code).toBe(0);
    expect(JSON.parse(send.stdout)).toEqual({ seq: 3 });
    await waitForEvents(handle, (ev) => ev.filter((e) => e.type === 'assistant_message').length === 3);

    const events = await agents(['events', sessionId, '--json']);
    expect(events.code).toBe(0);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => SessionEventSchema.parse(JSON.parse(l)));
    expect(lines.map((e) => e.seq)).toEqual(lines.map((_, i) => i));
    expect(lines.map((e) => e.type)).toEqual([
      'session_started',
      'user_message',
      'assistant_message',
      'user_message',
      'assistant_message',
      'tool_use',
      'tool_result',
      'assistant_message',
    ]);
    expect(lines[0]).toMatchObject({ agent: { system: 'Be brief.' } });

    const limited = await agents(['events', sessionId, '--from', '2', '--limit', '2', '--json']);
    expect(
      limited.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { seq: number }).seq),
    ).toEqual([2, 3]);

    const human = await agents(['events', sessionId]);
    expect(human.stdout).toMatch(/#1 user_message: hello from the CLI/);
    expect(human.stdout).toMatch(/#5 tool_use session_events/);

    const status = await agents(['status', sessionId, '--json']);
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'waiting_for_user', lastSeq: 7, sandboxes: [] });

    // Visibility is eventually consistent: poll until the server has indexed the session.
    let listed: string[] = [];
    for (let i = 0; i < 50 && !listed.includes(sessionId); i++) {
      const list = await agents(['list', '--json']);
      expect(list.code).toBe(0);
      listed = list.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { sessionId: string }).sessionId);
      if (!listed.includes(sessionId)) await new Promise((r) => setTimeout(r, 200));
    }
    expect(listed).toContain(sessionId);

    const end = await agents(['end', sessionId]);
    expect(end.code).toBe(0);
    expect(end.stdout).toBe('');
    const watch = await agents(['watch', sessionId, '--from', '7']);
    expect(watch.code).toBe(0);
    expect(watch.stdout).toMatch(/#8 session_ended: ended by user/);
  });

  it('interrupts a turn from the command line', async () => {
    const start = await agents(['start', '--json', '--id', 'cli-interrupt']);
    h.mock.script('cli-interrupt', { steps: [{ firstByteDelayMs: 30_000 }] });
    expect(start.code).toBe(0);
    expect((await agents(['send', 'cli-interrupt', 'slow one'])).code).toBe(0);
    const handle = h.env.client.workflow.getHandle('cli-interrupt');
    const deadline = Date.now() + 20_000;
    while (h.mock.requests('cli-interrupt').length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect((await agents(['interrupt', 'cli-interrupt', '--reason', 'stop'])).code).toBe(0);
    const events = await waitForEvents(handle, (ev) => ev.some((e) => e.type === 'interrupted'));
    expect(events.at(-1)).toMatchObject({ type: 'interrupted', reason: 'stop' });
  });

  it('loads an agent file in YAML and rejects an invalid one naming the field', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-cli-'));
    try {
      const good = path.join(dir, 'coder.yaml');
      fs.writeFileSync(
        good,
        'name: coder\nmodel: claude-custom\nsystem: You are careful.\ntools: [session_events]\nlimits: { maxToolRoundsPerTurn: 5 }\n',
      );
      const ok = await agents(['start', '--json', '--agent', good]);
      expect(ok.code).toBe(0);
      const id = (JSON.parse(ok.stdout) as { sessionId: string }).sessionId;
      const ev = await agents(['events', id, '--json', '--limit', '1']);
      expect(JSON.parse(ev.stdout)).toMatchObject({
        agent: { name: 'coder', model: 'claude-custom', limits: { maxToolRoundsPerTurn: 5 } },
      });

      const bad = path.join(dir, 'bad.yaml');
      fs.writeFileSync(bad, 'name: coder\nmodel: m\ntools: [rm_rf]\nlimits: { maxToolRoundsPerTurn: 0 }\n');
      expectOneLineError(
        await agents(['start', '--agent', bad]),
        /invalid agent file .*tools\.0.*limits\.maxToolRoundsPerTurn/,
      );
      expectOneLineError(
        await agents(['start', '--agent', path.join(dir, 'missing.yaml')]),
        /cannot read agent file .*ENOENT/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives a one-line error and a non-zero exit for bad input, unknown sessions and an unreachable server', async () => {
    expectOneLineError(await agents(['send', 'cli-nope', '']), /invalid message: text: text must not be empty/);
    expectOneLineError(await agents(['send', 'cli-nope', 'hi']), /unknown session cli-nope/);
    expectOneLineError(await agents(['events', 'cli-nope']), /unknown session cli-nope/);
    expectOneLineError(await agents(['status', 'cli-nope']), /unknown session cli-nope/);
    expectOneLineError(await agents(['events', 'x', '--from', '-3']), /non-negative integer/);
    expectOneLineError(await agents(['send', 'bad id!', 'hi']), /session ids are/);
    expectOneLineError(
      await agents(['status', 'x'], { TEMPORAL_ADDRESS: '127.0.0.1:1' }),
      /cannot reach Temporal at 127\.0\.0\.1:1/,
    );
    expectOneLineError(
      await agents(['status', 'x'], { TEMPORAL_ADDRESS: 'nonsense' }),
      /TEMPORAL_ADDRESS must be HOST:PORT/,
    );
    const dup = await agents(['start', '--id', 'cli-dup']);
    expect(dup.code).toBe(0);
    expectOneLineError(await agents(['start', '--id', 'cli-dup']), /session cli-dup already exists/);
    const unknown = await agents(['frobnicate']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stdout).toBe('');
  });

  it.each(['brain', 'tools'])(
    'runs a %s worker that reports readiness on stderr, with no warning a user cannot act on',
    async (role) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'dist/client.js'), 'worker', '--role', role], {
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: h.env.address,
          ANTHROPIC_BASE_URL: h.mock.url,
          ANTHROPIC_API_KEY: 'k',
        },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const ready = new RegExp(`worker ready: ${role}`);
      try {
        const deadline = Date.now() + 60_000;
        while (!ready.test(stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        expect(stderr).toMatch(ready);
        expect(stdout).toBe('');
        // An activity-only worker (tools, hands) polls no workflow tasks by design; the SDK's warning about it is dropped.
        expect(stderr).not.toMatch(/No workflows registered/);
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
    },
  );

  it('refuses to run a worker without a model endpoint', async () => {
    const noModel = await agents(['worker'], { ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '' });
    expect(noModel.code).not.toBe(0);
    expect(noModel.stderr).toMatch(/set ANTHROPIC_API_KEY/);
  });
});
