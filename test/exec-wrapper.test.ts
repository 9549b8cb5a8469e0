// The exec wrapper (EXEC_WRAPPER) on a real sandbox under the default runtime: run once per key, timeouts that end
// the whole process group, exact output with NUL bytes, the cap, stdin, and the two processes it starts per call.
import { randomUUID } from 'node:crypto';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import type { ExecRequest } from '../src/sandbox/provider';
import { SandboxRecipeSchema } from '../src/session/agent';

let provider: DockerSandboxProvider;
let sandboxId: string;

beforeAll(async () => {
  provider = new DockerSandboxProvider({ dockerHost: await resolveDockerHost(), defaultImage: sandboxImage() });
  sandboxId = (
    await provider.provision({
      sessionId: `exec-wrapper-${process.pid}`,
      name: 'main',
      recipe: SandboxRecipeSchema.parse({}),
      hostId: `test-exec-wrapper-${process.pid}`,
    })
  ).sandboxId;
}, 60_000);
afterAll(async () => {
  if (sandboxId) await provider.destroy(sandboxId);
});

const run = (script: string, opts: Partial<ExecRequest> = {}) =>
  provider.execute(sandboxId, { key: randomUUID(), script, timeoutSeconds: 30, maxOutputBytes: 4096, ...opts });
/** A script that prints `gone` once process `pid` no longer exists (a zombie still does), within 10 s. */
const gone = (pid: string) =>
  `p=${pid}; for i in $(seq 100); do [ -e /proc/$p ] || break; sleep 0.1; done; [ -e /proc/$p ] && cut -d" " -f3 /proc/$p/stat || echo gone`;

it('runs a command once per key: a second call, or one made while the first runs, reads the record', async () => {
  const key = randomUUID();
  const script = 'sleep 1; echo ran >> /tmp/counter-$MA_TAG; echo out; exit 3';
  const env = { MA_TAG: key };
  const [a, b] = await Promise.all([run(script, { key, env }), run(script, { key, env })]);
  const c = await run(script, { key, env });
  for (const r of [a, b, c]) expect(r).toMatchObject({ output: 'out\n', exitCode: 3, timedOut: false, outputBytes: 4 });
  expect([a, b, c].filter((r) => r.replayed)).toHaveLength(2);
  expect((await run('cat /tmp/counter-$MA_TAG', { env })).output).toBe('ran\n');
}, 60_000);

it('ends the whole process group at the timeout and reports 124, also for a command that ignores TERM', async () => {
  const r = await run('echo started; sleep 60 & echo $! > /tmp/bg-pid; sleep 60', { timeoutSeconds: 1 });
  expect(r).toMatchObject({ output: 'started\n', exitCode: 124, timedOut: true });
  const stubborn = await run('trap "" TERM; echo stubborn; while :; do sleep 1; done', { timeoutSeconds: 1 });
  expect(stubborn).toMatchObject({ output: 'stubborn\n', exitCode: 124, timedOut: true });
  // The background sleep went with its group, and the container's init reaped it.
  expect((await run(gone('$(cat /tmp/bg-pid)'))).output).toBe('gone\n');
}, 60_000);

it('returns output with NUL bytes exactly, and says how long it was', async () => {
  for (const [script, bytes] of [
    ["printf 'a\\0b\\0'", 'a\0b\0'],
    ["printf '\\0'", '\0'],
    ["printf 'x\\0\\0y'", 'x\0\0y'],
    ["printf '\\0lead'", '\0lead'],
    ['true', ''],
  ] as const) {
    const r = await run(script);
    expect(r.output).toBe(bytes);
    expect(r.outputBytes).toBe(bytes.length);
  }
});

it('cuts a long output to its head and tail and keeps the whole of it', async () => {
  const r = await run("head -c 100000 /dev/zero | tr '\\0' x; echo; echo END", { maxOutputBytes: 1000 });
  expect(r.outputBytes).toBe(100005);
  expect(r.output).toMatch(/^x{500}\n\[output truncated: 99005 of 100005 bytes omitted; the whole output is in /);
  expect(r.output.endsWith('x\nEND\n')).toBe(true);
  expect(r.fullOutputPath).toMatch(/^\/home\/agent\/\.tool-output\/.+\.txt$/);
  expect((await run(`wc -c < '${r.fullOutputPath}'`)).output).toBe('100005\n');
});

it('passes stdin to the command', async () => {
  const input = Buffer.from('line one\n\0binary\n');
  const r = await run('cat; echo "[$?]"', { stdin: input });
  expect(r.output).toBe(`${input.toString('utf8')}[0]\n`);
});

it('starts two processes per call besides the exec itself: the command and its watchdog', async () => {
  // Process ids are handed out in order inside the sandbox's own pid namespace.
  const pids: number[] = [];
  for (let i = 0; i < 3; i++) pids.push(Number((await run('echo $$')).output));
  expect(pids[1] - pids[0]).toBe(3);
  expect(pids[2] - pids[1]).toBe(3);
  // None of them is left behind: besides the container's init and its `sleep infinity`, only this call's wrapper,
  // command (the bash running the pipeline) and watchdog. (A zombie is one the init has yet to reap: the last call's
  // watchdog is killed, not waited for.)
  const ps = await run('ps -e -o pid=,ppid=,stat=,comm= | grep -v -e " ps$" -e " grep$"');
  const rest = ps.output
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([pid, , stat, comm]) => pid !== '1' && comm !== 'sleep' && !stat.startsWith('Z'));
  expect(rest.map(([, , , comm]) => comm)).toEqual(['bash', 'bash', 'bash']);
});

it('reaps what a command leaves running once it ends', async () => {
  const pid = (await run('sleep 0.2 > /dev/null 2>&1 & echo $!')).output.trim();
  expect(pid).toMatch(/^\d+$/);
  expect((await run(gone(pid))).output).toBe('gone\n');
  expect((await run('cat /proc/1/comm')).output).toBe('docker-init\n');
});
