// The exec wrapper (EXEC_WRAPPER) on a real sandbox under the default runtime: run once per key, timeouts that end
// the whole process group, exact output with NUL bytes, the cap, stdin, and the warm units that run its commands.
import { createHash, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
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

/** Runs `script` as `bash -c` in a bare exec, stdout and stderr joined, as the command ran before warm units. */
async function bashC(script: string): Promise<string> {
  const exec = await provider.docker.getContainer(sandboxId).exec({
    Cmd: ['bash', '-c', script],
    User: '1000',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  const out: Buffer[] = [];
  const sink = new PassThrough().on('data', (c: Buffer) => out.push(c));
  provider.docker.modem.demuxStream(stream, sink, sink);
  await new Promise((resolve) => stream.on('end', resolve));
  return Buffer.concat(out).toString('utf8');
}

/** Waits until both slots hold a free warm unit, looking with a bare exec (a call of the wrapper would claim one). */
async function warmUnit(): Promise<void> {
  const check =
    'for n in 0 1; do read -r u s c q < /tmp/.ma-exec/warm.$n && [ ! -e "$u.claimed" ] && kill -0 "$s" && kill -0 "$c" || exit; done; echo free';
  for (let i = 0; i < 100; i++) {
    if ((await bashC(check)).includes('free')) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the warm units were not published within 5 s');
}

it('runs a command once per key: a second call, or one made while the first runs, reads the record', async () => {
  const key = randomUUID();
  const script = 'sleep 1; echo ran >> /tmp/counter-$MA_TAG; echo out; exit 3';
  const env = { MA_TAG: key };
  // The calls wait on the warm unit the first claims (a retry's waiter reads the same FIFO as the call).
  await run('true');
  await warmUnit();
  const calls = await Promise.all([1, 2, 3, 4].map(() => run(script, { key, env })));
  calls.push(await run(script, { key, env }));
  for (const r of calls) expect(r).toMatchObject({ output: 'out\n', exitCode: 3, timedOut: false, outputBytes: 4 });
  expect(calls.filter((r) => r.replayed)).toHaveLength(4);
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

it("passes stdin to the command: binary on the exec's stream, text through a warm unit", async () => {
  const input = Buffer.from('line one\n\0binary\n');
  const r = await run('cat; echo "[$?]"', { stdin: input });
  expect(r.output).toBe(`${input.toString('utf8')}[0]\n`);
  await warmUnit();
  const text = Buffer.from('{"json": "ünïcode\\n", "end": "no newline"}');
  // A warm unit's output file is named for its slot, number and supervisor; stdin sent as text is a file.
  const read = 'readlink /proc/$$/fd/0 /proc/$$/fd/1';
  const [echoed, from, to] = (await run(`cat; echo; ${read}`, { stdin: text })).output.split('\n');
  expect(echoed).toBe(text.toString('utf8'));
  expect(from).toMatch(/^\/tmp\/\.ma-exec\/[0-9a-f-]+\.stdin$/);
  expect(to).toMatch(/^\/tmp\/\.ma-exec\/q\.[01]\.\d+\.\d+\.out$/);
  expect((await run('wc -c', { stdin: Buffer.alloc(0) })).output.trim()).toBe('0');
  // The largest text the host sends as a variable, and one byte more, which comes on the stream.
  for (const size of [64 * 1024, 64 * 1024 + 1]) {
    await warmUnit();
    const big = await run(`md5sum | cut -c1-32; ${read}`, { stdin: Buffer.alloc(size, 'a') });
    const [sum, via, out] = big.output.trim().split('\n');
    expect(sum).toBe(createHash('md5').update(Buffer.alloc(size, 'a')).digest('hex'));
    expect(via.endsWith('.stdin')).toBe(size <= 64 * 1024);
    expect(/\/q\.[01]\.\d+\.\d+\.out$/.test(out)).toBe(size <= 64 * 1024);
  }
});

/** The processes in the sandbox besides its init, `sleep infinity`, zombies and the listing itself: [pid, ppid, args]. */
async function processes(): Promise<Array<[number, number, string]>> {
  const ps = await run('ps -e -o pid=,ppid=,stat=,args= | cut -c1-80 | grep -v -e " ps -e" -e " cut -c" -e " grep -v"');
  expect(ps.exitCode).toBe(0);
  return ps.output
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([pid, , stat, comm]) => pid !== '1' && comm !== 'sleep' && !stat.startsWith('Z'))
    .map(([pid, ppid, , ...args]) => [Number(pid), Number(ppid), args.join(' ')]);
}

it('runs a command in a bash started before its call, and leaves nothing of earlier calls behind', async () => {
  await run('true');
  for (let i = 0; i < 3; i++) {
    await warmUnit();
    const rest = await processes();
    // This call's wrapper and the two units' supervisors (forks of earlier wrappers) carry the wrapper's script; the
    // units' bashes, this call's command and the other slot's, carry the unit's. Nothing else is left of earlier
    // calls.
    const wrappers = rest.filter(([, , args]) => args.startsWith('bash -c k=$MA_KEY')).map(([pid]) => pid);
    const commands = rest.filter(([, , args]) => args.startsWith('bash -c u=$1'));
    expect(wrappers).toHaveLength(3);
    expect(commands).toHaveLength(2);
    expect(rest).toHaveLength(5);
    // The bashes were started before this call's exec (their pids were handed out earlier), by the supervisors.
    for (const [command, supervisor] of commands) {
      expect(wrappers).toContain(supervisor);
      expect(command).toBeLessThan(Math.max(...wrappers));
    }
  }
});

it('keeps two warm units, no more, through rounds of calls made at once', async () => {
  for (let round = 0; round < 10; round++) {
    const calls = await Promise.all([0, 1, 2].map((i) => run(`echo ${round}.${i}`)));
    expect(calls.map((c) => c.output)).toEqual([0, 1, 2].map((i) => `${round}.${i}\n`));
  }
  await warmUnit();
  // Besides this call's own wrapper, supervisor and bash: the other slot's supervisor and bash.
  const rest = await processes();
  expect(rest.filter(([, , args]) => args.startsWith('bash -c u=$1'))).toHaveLength(2);
  expect(rest).toHaveLength(5);
}, 60_000);

it("gives a warm unit's command the call's variables only, not an earlier call's or the wrapper's", async () => {
  await run('true', { env: { MA_A: 'first' } });
  await warmUnit();
  const r = await run('echo "${MA_A-unset} ${MA_B} ${MA_KEY-unset} ${UNIT-unset} ${u-unset} ${r-unset} $# $0"', {
    env: { MA_B: 'two words\nand a line' },
  });
  expect(r.output).toBe('unset two words\nand a line unset unset unset unset 0 bash\n');
});

it('runs a script as `bash -c` would: its errors, line numbers, $0, $# and exit code', async () => {
  await run('true');
  for (const script of [
    'nosuchcommand; echo "$LINENO $0 $#"',
    'true\nnosuch2 2>&1\necho "line $LINENO"; exit 5',
    'return 3',
    'echo "${BASH_SOURCE[0]-none} ${FUNCNAME[0]-none}"; cd /nonexistent',
    // Signals: none ignored or blocked (a command started in the background without job control ignores SIGINT).
    'grep -E "^Sig(Ign|Blk)" /proc/$$/status; trap "echo caught" INT; kill -INT $$',
  ]) {
    await warmUnit();
    // stderr joined to stdout in the script itself: the bare exec's two streams interleave as they come.
    const r = await run(`exec 2>&1; ${script}; echo "[$?]"`);
    expect(r.output).toBe(await bashC(`exec 2>&1; ${script}; echo "[$?]"`));
  }
}, 60_000);

it('passes over warm units killed while they wait, and records a command whose supervisor was killed', async () => {
  await run('true');
  await warmUnit();
  // A call with binary stdin starts its own command: the warm units stay free, and this command kills them.
  const kill = 'for w in /tmp/.ma-exec/warm.*; do read -r u s c q < $w; kill -KILL $s $c && echo killed; done';
  const killed = await run(`cat > /dev/null; ${kill}`, { stdin: Buffer.from([0]) });
  expect(killed.output).toBe('killed\nkilled\n');
  expect(await run('echo fine')).toMatchObject({ output: 'fine\n', exitCode: 0 });
  // The slots are filled again.
  await warmUnit();
  // This command's own supervisor is killed: the call still ends, with exit 255 and the output written.
  const orphan = await run(
    'for w in /tmp/.ma-exec/warm.*; do read -r u s c q < $w; [ "$c" = $$ ] && kill -KILL $s; done; echo alone',
  );
  expect(orphan).toMatchObject({ output: 'alone\n', exitCode: 255 });
  expect(await run('echo fine')).toMatchObject({ output: 'fine\n', exitCode: 0 });
  await warmUnit();
}, 60_000);

it('passes over units whose supervisor alone was killed, and ends their bash', async () => {
  await run('true');
  await warmUnit();
  // The supervisors carry the wrapper's text (`pkill -f` of a word in it kills them); their bashes live on.
  const kill = 'for w in /tmp/.ma-exec/warm.*; do read -r u s c q < $w; kill -KILL $s && echo $c; done';
  const bashes = (await run(`cat > /dev/null; ${kill}`, { stdin: Buffer.from([0]) })).output.trim().split('\n');
  expect(bashes).toHaveLength(2);
  expect(await run('echo fine')).toMatchObject({ output: 'fine\n', exitCode: 0, replayed: false });
  await warmUnit();
  expect((await run(`for p in ${bashes.join(' ')}; do [ -e /proc/$p ] && echo left $p; done; true`)).output).toBe('');
}, 60_000);

it('replays a record of the wrapper before warm units, and gives up on an attempt that left none', async () => {
  const key = randomUUID();
  // Such a record: $f.run, $f.out and `code size` in $f.exit.
  await bashC(`cd /tmp/.ma-exec && : > ${key}.run && printf 'old out' > ${key}.out && echo "3 7" > ${key}.exit`);
  expect(await run('echo new', { key })).toMatchObject({ output: 'old out', exitCode: 3, replayed: true });
  const lost = randomUUID();
  await bashC(`: > /tmp/.ma-exec/${lost}.run`);
  expect(await run('echo new', { key: lost, timeoutSeconds: 1 })).toMatchObject({
    output: 'an earlier attempt of this call left no record of it',
    exitCode: 255,
    replayed: true,
  });
}, 60_000);

it('carries on when a command removes the records', async () => {
  await run('true');
  await warmUnit();
  // The command removed its own record: the call says so.
  expect(await run('rm -rf /tmp/.ma-exec; echo removed')).toMatchObject({
    output: 'the command record was tampered with',
    exitCode: 99,
  });
  for (let i = 0; i < 4; i++)
    expect(await run(`echo ${i}; exit ${i}`)).toMatchObject({ output: `${i}\n`, exitCode: i });
  await warmUnit();
  expect(await run('echo again')).toMatchObject({ output: 'again\n', exitCode: 0 });
}, 60_000);

it('ends a command started without a warm unit (one with binary stdin) at its timeout too', async () => {
  const r = await run('cat > /dev/null; echo read; sleep 60', { stdin: Buffer.from([0]), timeoutSeconds: 1 });
  expect(r).toMatchObject({ output: 'read\n', exitCode: 124, timedOut: true });
}, 30_000);

it('reaps what a command leaves running once it ends', async () => {
  const pid = (await run('sleep 0.2 > /dev/null 2>&1 & echo $!')).output.trim();
  expect(pid).toMatch(/^\d+$/);
  expect((await run(gone(pid))).output).toBe('gone\n');
  expect((await run('cat /proc/1/comm')).output).toBe('docker-init\n');
});
