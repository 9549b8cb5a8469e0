// The tools of the built-in toolset as sandbox tools, against the real Docker engine: read, write, edit, glob
// and grep in the workspace, refusing paths that leave it, and the persistent shell the toolset calls bash.
import { MockActivityEnvironment } from '@temporalio/testing';
import type Docker from 'dockerode';
import { createHandsActivities, type ExecuteInput, type ToolOutput } from '../src/hands/hands-activities';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { SandboxRecipeSchema } from '../src/session/agent';
import { endSignal, interruptSignal, statusQuery } from '../src/session/contract';
import { toolStep } from './helpers/actions';
import { allEvents, say, startHarness, startSession, type Harness } from './helpers/env';
import { bash, callTool, docker, sessionContainers } from './helpers/hands';

let h: Harness;
let d: Docker;
const HOST = `test-toolset-${process.pid}`;
const FILE_TOOLS = ['bash', 'read', 'write', 'edit', 'glob', 'grep'] as const;

beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'all', hostId: HOST });
});
// Stopping the harness removes the containers left on its host.
afterAll(() => h?.stop());

const dockerProvider = async () =>
  new DockerSandboxProvider({ dockerHost: await resolveDockerHost(), defaultImage: sandboxImage() });

/** A tool call as the execute activity gets it (an activity retry repeats it), in a sandbox of its own. */
type Execute = (toolUseId: string, tool: ExecuteInput['tool'], input: unknown) => Promise<ToolOutput>;
async function withExecute(sessionId: string, fn: (run: Execute) => Promise<void>): Promise<void> {
  const provider = await dockerProvider();
  const sandbox = await provider.provision({
    sessionId,
    name: 'main',
    recipe: SandboxRecipeSchema.parse({}),
    hostId: HOST,
  });
  try {
    const mockEnv = new MockActivityEnvironment();
    const activities = createHandsActivities({ provider, hostId: HOST });
    await fn((toolUseId, tool, input) =>
      mockEnv.run(activities.execute, { sandboxId: sandbox.sandboxId, toolUseId, tool, input, timeoutSeconds: 30 }),
    );
  } finally {
    await provider.destroy(sandbox.sandboxId);
  }
}

/** Waits until a process whose command line matches `pattern` (a pgrep -f expression) runs in the container. */
async function untilRunning(containerId: string, pattern: string): Promise<void> {
  const provider = await dockerProvider();
  for (let i = 0; i < 300; i++) {
    const probe = await provider.execute(containerId, {
      key: `probe-${process.pid}-${Date.now()}-${i}`,
      script: `pgrep -f '${pattern}'`,
      timeoutSeconds: 10,
      maxOutputBytes: 4096,
    });
    if (probe.exitCode === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing matching ${pattern} started in ${containerId.slice(0, 12)}`);
}

/** The output and error flag of one call, the parts these tests compare. */
const result = async (r: ReturnType<typeof callTool>) => {
  const { output, isError } = await r;
  return { output, isError };
};

describe('the file tools', () => {
  let handle: Awaited<ReturnType<typeof startSession>>;
  const call = (tool: string, input: Record<string, unknown>) => result(callTool(h, handle, tool, input));
  beforeAll(async () => {
    handle = await startSession(h, { agent: { tools: [...FILE_TOOLS] } });
  });
  afterAll(async () => {
    await handle.signal(endSignal, {});
  });

  it('writes, reads and edits a file in the workspace', async () => {
    expect(await call('write', { file_path: 'src/a.txt', content: 'alpha\nbeta\ngamma\n' })).toEqual({
      output: 'wrote 17 bytes to /workspace/src/a.txt',
      isError: false,
    });
    expect(await call('read', { file_path: 'src/a.txt' })).toEqual({ output: 'alpha\nbeta\ngamma\n', isError: false });
    expect(await call('read', { file_path: '/workspace/src/a.txt', view_range: [2, 2] })).toEqual({
      output: 'beta\n',
      isError: false,
    });
    expect(await call('read', { file_path: 'src/a.txt', view_range: [2, -1] })).toEqual({
      output: 'beta\ngamma\n',
      isError: false,
    });
    expect(await call('read', { file_path: 'src/a.txt', view_range: [9, 0] })).toEqual({
      output: 'read: view_range starts at line 9, but src/a.txt has 3 lines',
      isError: true,
    });
    expect(await call('edit', { file_path: 'src/a.txt', old_string: 'beta', new_string: 'BETA' })).toEqual({
      output: 'edited /workspace/src/a.txt: 1 replacement',
      isError: false,
    });
    const twice = await call('edit', { file_path: 'src/a.txt', old_string: 'a\n', new_string: 'A\n' });
    expect(twice).toEqual({
      output:
        'edit: old_string occurs 2 times in src/a.txt; give more context to make it unique, or set replace_all; nothing was changed',
      isError: true,
    });
    expect(
      await call('edit', { file_path: 'src/a.txt', old_string: 'a\n', new_string: 'A\n', replace_all: true }),
    ).toEqual({ output: 'edited /workspace/src/a.txt: 2 replacements', isError: false });
    expect(await call('edit', { file_path: 'src/a.txt', old_string: 'delta', new_string: 'x' })).toEqual({
      output: 'edit: old_string does not occur in src/a.txt; nothing was changed',
      isError: true,
    });
    expect((await bash(h, handle, 'cat src/a.txt')).output).toBe('alphA\nBETA\ngammA\n[exit 0]');
    expect(await call('read', { file_path: 'src/none.txt' })).toEqual({
      output: 'read: src/none.txt does not exist',
      isError: true,
    });
    expect(await call('read', { file_path: 'src' })).toEqual({ output: 'read: src is a directory', isError: true });
    expect(await call('write', { file_path: 'empty.txt', content: '' })).toEqual({
      output: 'wrote 0 bytes to /workspace/empty.txt',
      isError: false,
    });
    expect(await call('read', { file_path: 'empty.txt' })).toEqual({ output: '(empty.txt is empty)', isError: false });
  });

  it('refuses any path that leads out of the workspace, through .. or a symbolic link', async () => {
    await bash(h, handle, 'ln -s /etc etc-link && ln -s /tmp tmp-link && echo root-secret > /tmp/secret.txt');
    const refusals = [];
    for (const [tool, input] of [
      ['read', { file_path: '../etc/passwd' }],
      ['read', { file_path: '/etc/passwd' }],
      ['read', { file_path: 'etc-link/passwd' }],
      ['write', { file_path: 'tmp-link/planted.txt', content: 'x' }],
      ['edit', { file_path: '/tmp/secret.txt', old_string: 'root', new_string: 'mine' }],
      ['grep', { pattern: 'secret', path: 'tmp-link' }],
      ['glob', { pattern: '*', path: '/tmp' }],
    ] as const) {
      refusals.push(await call(tool, input));
    }
    expect(refusals.map((r) => r.output)).toEqual([
      'read: ../etc/passwd is outside the workspace /workspace and the mounts under /mnt',
      'read: /etc/passwd is outside the workspace /workspace and the mounts under /mnt',
      'read: etc-link/passwd is outside the workspace /workspace and the mounts under /mnt',
      'write: tmp-link/planted.txt is outside the workspace /workspace and the mounts under /mnt',
      'edit: /tmp/secret.txt is outside the workspace /workspace and the mounts under /mnt',
      'grep: tmp-link is outside the workspace /workspace and the mounts under /mnt',
      'glob: /tmp is outside the workspace /workspace and the mounts under /mnt',
    ]);
    expect(refusals.every((r) => r.isError)).toBe(true);
    // A search of the whole workspace does not descend through the links either.
    expect(await call('grep', { pattern: 'root' })).toEqual({ output: 'no matches', isError: false });
    expect(await call('glob', { pattern: '**/passwd' })).toEqual({ output: 'no matches', isError: false });
    expect((await bash(h, handle, 'ls /tmp/planted.txt 2>&1; cat /tmp/secret.txt')).output).toMatch(
      /No such file or directory\nroot-secret\n\[exit 0\]$/,
    );
  });

  it('globs newest first, skipping .git and node_modules', async () => {
    await bash(
      h,
      handle,
      [
        'mkdir -p g/deep g/node_modules/m g/.git',
        'touch -d 2020-01-01 g/old.ts && touch -d 2022-01-01 g/deep/new.ts && touch -d 2021-01-01 g/mid.ts',
        'touch g/node_modules/m/index.ts g/.git/x.ts g/readme.md',
      ].join(' && '),
    );
    expect(await call('glob', { pattern: '**/*.ts', path: 'g' })).toEqual({
      output: '/workspace/g/deep/new.ts\n/workspace/g/mid.ts\n/workspace/g/old.ts',
      isError: false,
    });
    expect(await call('glob', { pattern: 'g/*.{ts,md}' })).toEqual({
      output: '/workspace/g/readme.md\n/workspace/g/mid.ts\n/workspace/g/old.ts',
      isError: false,
    });
    expect(await call('glob', { pattern: '*.rs' })).toEqual({ output: 'no matches', isError: false });
  });

  it('greps as path:line:text, in a directory or one file, with a clear error for a bad expression', async () => {
    await call('write', { file_path: 'q/one.py', content: 'import os\n# TODO: first\nx = 1\n' });
    await call('write', { file_path: 'q/two.md', content: 'nothing\nstill TODO here\n' });
    await bash(
      h,
      handle,
      'mkdir -p q/node_modules && echo TODO > q/node_modules/skip.js && printf "TODO\\0binary" > q/blob.bin',
    );
    expect(await call('grep', { pattern: 'TODO', path: 'q' })).toEqual({
      output: '/workspace/q/one.py:2:# TODO: first\n/workspace/q/two.md:2:still TODO here',
      isError: false,
    });
    expect(await call('grep', { pattern: '^x\\s*=\\s*\\d+$', path: 'q/one.py' })).toEqual({
      output: '/workspace/q/one.py:3:x = 1',
      isError: false,
    });
    const bad = await call('grep', { pattern: '(unclosed' });
    expect(bad.isError).toBe(true);
    expect(bad.output).toMatch(/^grep: invalid regular expression \(unclosed: missing \)/);
  });

  it('caps a long output like bash, keeping the whole of it in the sandbox', async () => {
    await bash(h, handle, 'seq 1 100000 > long.txt');
    const r = await callTool(h, handle, 'read', { file_path: 'long.txt' });
    expect(r.output.length).toBeLessThan(40 * 1024);
    expect(r.output).toMatch(/^1\n2\n3\n/);
    expect(r.output).toMatch(
      /\[output truncated: \d+ of 588895 bytes omitted; the whole output is in \/home\/agent\/\.tool-output\/\S+\.txt\]/,
    );
    expect(r.output).toMatch(/\n99999\n100000\n$/);
    expect(r.outputRef).toMatchObject({ sandbox: 'main', bytes: 588895 });
    expect((await bash(h, handle, `wc -l < ${r.outputRef!.path}`)).output).toBe('100000\n[exit 0]');
  });
});

describe('file tool calls the schema refuses', () => {
  it('are answered before anything runs: no sandbox is provisioned for them', async () => {
    const handle = await startSession(h, { agent: { tools: [...FILE_TOOLS] } });
    h.mock.script(handle.workflowId, {
      steps: [
        toolStep('read', { file_path: '', view_range: [0, 3] }),
        toolStep('write', { file_path: 'a.txt' }),
        toolStep('edit', { file_path: 'a.txt', old_string: '', new_string: 'x', regex: true }),
        toolStep('glob', { pattern: '/etc/*' }),
        toolStep('glob', { pattern: 'src/../../*' }),
        toolStep('grep', { pattern: '' }),
      ],
    });
    const events = await say(handle, 'Use the file tools');
    expect(
      events
        .filter((e) => e.type === 'tool_result')
        .map((r) => (r.type === 'tool_result' ? [r.isError, r.output] : [])),
    ).toEqual([
      [true, 'invalid input for read: file_path: must not be empty; view_range.0: the first line is 1'],
      [true, 'invalid input for write: content: Invalid input: expected string, received undefined'],
      [true, 'invalid input for edit: old_string: old_string must not be empty; (root): Unrecognized key: "regex"'],
      [true, 'invalid input for glob: pattern: pattern must be relative: give the directory to search as path'],
      [true, 'invalid input for glob: pattern: pattern must not climb out with ..'],
      [true, 'invalid input for grep: pattern: pattern must not be empty'],
    ]);
    expect(events.filter((e) => e.type === 'sandbox_provisioned')).toEqual([]);
    expect((await handle.query(statusQuery)).sandboxes).toEqual([]);
    expect(await sessionContainers(d, handle.workflowId)).toHaveLength(0);
    await handle.signal(endSignal, {});
  });
});

describe('the file tools under faults', () => {
  it('run once per tool_use id when the activity is retried', () =>
    withExecute(`toolset-idem-${process.pid}`, async (run) => {
      await run('toolu_w', 'write', { file_path: 'n.txt', content: 'x' });
      const first = await run('toolu_double', 'edit', {
        file_path: 'n.txt',
        old_string: 'x',
        new_string: 'xx',
        replace_all: true,
      });
      const retried = await run('toolu_double', 'edit', {
        file_path: 'n.txt',
        old_string: 'x',
        new_string: 'xx',
        replace_all: true,
      });
      expect(first).toEqual({ output: 'edited /workspace/n.txt: 1 replacement', isError: false });
      expect(retried).toEqual(first);
      expect(await run('toolu_r', 'read', { file_path: 'n.txt' })).toEqual({ output: 'xx', isError: false });
    }));

  it('report a lost container as an infra error, and run in its replacement with the files intact', async () => {
    const handle = await startSession(h, { agent: { tools: [...FILE_TOOLS] } });
    await callTool(h, handle, 'write', { file_path: 'kept.txt', content: 'kept\n' });
    const [container] = await sessionContainers(d, handle.workflowId, false);
    await d.getContainer(container.Id).kill();
    const lost = await callTool(h, handle, 'read', { file_path: 'kept.txt' });
    expect(lost).toMatchObject({ isError: true, error: { kind: 'infra' } });
    expect(lost.output).toMatch(/sandbox main was lost/);
    expect((await allEvents(handle)).find((e) => e.type === 'sandbox_lost')).toMatchObject({
      name: 'main',
      sandboxId: container.Id,
    });
    expect(await result(callTool(h, handle, 'read', { file_path: 'kept.txt' }))).toEqual({
      output: 'kept\n',
      isError: false,
    });
    await handle.signal(endSignal, {});
  });
});

describe('the persistent shell', () => {
  const SHELL = { name: 'bash', tool: 'shell', sandbox: 'main' } as const;
  const RESTARTED =
    '[shell restarted: the previous shell is gone (its sandbox was stopped or replaced, or a call was cancelled), so the working directory and environment are reset]';
  let handle: Awaited<ReturnType<typeof startSession>>;
  const sh = (input: Record<string, unknown>) => result(callTool(h, handle, 'bash', input));
  beforeAll(async () => {
    handle = await startSession(h, {
      agent: { tools: [SHELL], sandboxes: { main: { env: { FROM_RECIPE: 'recipe' } } } },
    });
  });
  afterAll(async () => {
    await handle.signal(endSignal, {});
  });

  it('keeps the working directory and environment variables from one call to the next', async () => {
    expect(await sh({ command: 'cd /tmp && export X=1 && greet() { echo "hi $1"; }' })).toEqual({
      output: '[exit 0]',
      isError: false,
    });
    expect(await sh({ command: 'pwd; echo $X; greet you; echo $FROM_RECIPE' })).toEqual({
      output: '/tmp\n1\nhi you\nrecipe\n[exit 0]',
      isError: false,
    });
  });

  it('starts a fresh shell on restart, alone or before a command', async () => {
    await sh({ command: 'cd /tmp && export X=1' });
    expect(await sh({ restart: true })).toEqual({ output: 'the shell has been restarted', isError: false });
    expect(await sh({ command: 'pwd; echo "[$X]"' })).toEqual({ output: '/workspace\n[]\n[exit 0]', isError: false });
    await sh({ command: 'cd /tmp && export X=2' });
    expect(await sh({ restart: true, command: 'pwd; echo "[$X]"; echo $FROM_RECIPE' })).toEqual({
      output: '/workspace\n[]\nrecipe\n[exit 0]',
      isError: false,
    });
  });

  it('reports a non-zero exit as an error carrying the output, and the shell goes on', async () => {
    await sh({ command: 'cd /tmp' });
    const failed = await callTool(h, handle, 'bash', { command: 'echo out; echo err >&2; ls /nowhere' });
    expect(failed).toMatchObject({ isError: true, error: { kind: 'tool' } });
    expect(failed.output).toBe("out\nerr\nls: cannot access '/nowhere': No such file or directory\n[exit 2]");
    expect(await sh({ command: 'pwd' })).toEqual({ output: '/tmp\n[exit 0]', isError: false });
    expect(await sh({ command: 'echo leaving; exit 3' })).toEqual({
      output: 'leaving\n[the shell exited; the next call starts a fresh one]\n[exit 3]',
      isError: true,
    });
    expect(await sh({ command: 'pwd' })).toEqual({ output: '/workspace\n[exit 0]', isError: false });
  });

  it('stops a call at its timeout_ms, with its shell, and answers the next call in a fresh one', async () => {
    await sh({ command: 'cd /tmp' });
    const slow = await callTool(h, handle, 'bash', { command: 'echo before; sleep 61; echo after', timeout_ms: 1000 });
    expect(slow).toMatchObject({ isError: true, error: { kind: 'tool' } });
    expect(slow.output).toBe(
      'before\n[timed out after 1000 ms; the shell was stopped, and the next call starts a fresh one]\n[exit 124]',
    );
    // The command was killed with its shell: nothing of it runs on.
    expect(await sh({ command: 'pwd; pgrep -f "sleep 6[1]" || echo no sleep left' })).toEqual({
      output: '/workspace\nno sleep left\n[exit 0]',
      isError: false,
    });
  });

  it('never runs a call past the sandbox command timeout, whatever its timeout_ms', async () => {
    const short = await startSession(h, {
      agent: { tools: [SHELL], sandboxes: { main: { commandTimeoutSeconds: 1 } } },
    });
    const r = await callTool(h, short, 'bash', { command: 'sleep 30', timeout_ms: 600_000 });
    expect(r.output).toBe(
      '[timed out after 1000 ms; the shell was stopped, and the next call starts a fresh one]\n[exit 124]',
    );
    await short.signal(endSignal, {});
  });

  it('ends the shell of a call an interrupt cancelled, and says so in the next call', async () => {
    await sh({ command: 'cd /tmp' });
    const [container] = await sessionContainers(d, handle.workflowId, false);
    const interruptOnceRunning = async () => {
      await untilRunning(container.Id, 'sleep 6[2]');
      await handle.signal(interruptSignal, {});
    };
    const cancelled = await callTool(h, handle, 'bash', { command: 'sleep 62' }, { during: interruptOnceRunning });
    expect(cancelled).toMatchObject({
      isError: true,
      output: expect.stringMatching(/interrupted before the tool finished/),
    });
    expect(await sh({ command: 'pwd; pgrep -f "sleep 6[2]" || echo no sleep left' })).toEqual({
      output: `${RESTARTED}\n/workspace\nno sleep left\n[exit 0]`,
      isError: false,
    });
  });

  it('comes back as a fresh shell after its container is lost, and says so', async () => {
    await sh({ command: 'cd /tmp && export X=1' });
    const [container] = await sessionContainers(d, handle.workflowId, false);
    await d.getContainer(container.Id).kill();
    expect(await callTool(h, handle, 'bash', { command: 'pwd' })).toMatchObject({
      isError: true,
      error: { kind: 'infra' },
    });
    const fresh = await sh({ command: 'pwd; echo "[$X]"' });
    expect(fresh).toEqual({ output: `${RESTARTED}\n/workspace\n[]\n[exit 0]`, isError: false });
    expect(await sh({ command: 'echo "[$X]"' })).toEqual({ output: '[]\n[exit 0]', isError: false });
  });

  it('refuses bad input before provisioning anything', async () => {
    const fresh = await startSession(h, { agent: { tools: [SHELL] } });
    h.mock.script(fresh.workflowId, {
      steps: [
        toolStep('bash', {}),
        toolStep('bash', { command: 'ls', timeout_ms: -5 }),
        toolStep('bash', { command: 'ls', cwd: '/' }),
      ],
    });
    const events = await say(fresh, 'Run something');
    expect(
      events
        .filter((e) => e.type === 'tool_result')
        .map((r) => (r.type === 'tool_result' ? [r.isError, r.output] : [])),
    ).toEqual([
      [true, 'invalid input for bash: (root): command is required unless restart is true'],
      [true, 'invalid input for bash: timeout_ms: timeout_ms must not be negative'],
      [true, 'invalid input for bash: (root): Unrecognized key: "cwd"'],
    ]);
    expect(events.filter((e) => e.type === 'sandbox_provisioned')).toEqual([]);
    await fresh.signal(endSignal, {});
  });

  it('runs a command once per tool_use id when the activity is retried, even while the first attempt runs', () =>
    withExecute(`shell-idem-${process.pid}`, async (execute) => {
      const run = (toolUseId: string, command: string) => execute(toolUseId, 'shell', { command });
      const first = await run('toolu_count', 'mkdir -p d && cd d && echo run >> counter && wc -l < counter');
      expect(first).toEqual({ output: '1\n[exit 0]', isError: false });
      expect(await run('toolu_count', 'mkdir -p d && cd d && echo run >> counter && wc -l < counter')).toEqual(first);
      const slow = 'sleep 1; echo run >> counter; wc -l < counter';
      const [a, b] = await Promise.all([run('toolu_slow', slow), run('toolu_slow', slow)]);
      expect(a).toEqual({ output: '2\n[exit 0]', isError: false });
      expect(b).toEqual(a);
      expect(await run('toolu_check', 'pwd; cat counter')).toEqual({
        output: '/workspace/d\nrun\nrun\n[exit 0]',
        isError: false,
      });
    }));
});
