// Session mounts on the real Docker engine: files, memory stores and skills written into sandboxes, outputs and
// memory changes collected after each tool call. The mount data is an in-memory MountData (the stores' own
// repositories are tested apart); sandboxes, workflow and worker are real.
import type Docker from 'dockerode';
import { createHash } from 'node:crypto';
import { endSignal } from '../src/session/contract';
import { allEvents, startHarness, startSession, type Harness } from './helpers/env';
import { bash, callTool, docker, sessionContainers } from './helpers/hands';
import type { MountData, MemoryWrite, SessionMount } from '../src/hands/mount-data';
import { resolveDockerHost, sandboxImage } from '../src/host/docker-host';
import { DockerSandboxProvider } from '../src/sandbox/docker';
import { sessionMountsHands } from '../src/hands/session-mounts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** The only fake: files, stores and skills in memory, with every write recorded. */
class MemoryMountData implements MountData {
  readonly sessions = new Map<string, { generation: number; mounts: SessionMount[] }>();
  readonly files = new Map<string, Buffer>();
  readonly stores = new Map<string, Map<string, Buffer>>();
  readonly skills = new Map<string, { path: string; content: Buffer; executable: boolean }[]>();
  readonly outputs: { sessionId: string; relativePath: string; content: string }[] = [];
  readonly writes: { path: string; content: string; expectedSha256: string | null }[] = [];
  readonly deletes: { path: string; expectedSha256: string }[] = [];

  unmount(sessionId: string, mountPath: string): void {
    const s = this.sessions.get(sessionId)!;
    s.mounts = s.mounts.filter((m) => m.mountPath !== mountPath);
    s.generation += 1;
  }
  mount(sessionId: string, ...mounts: SessionMount[]): void {
    const s = this.sessions.get(sessionId) ?? { generation: 0, mounts: [] };
    s.mounts.push(...mounts);
    s.generation += mounts.length;
    this.sessions.set(sessionId, s);
  }
  async mounts(sessionId: string) {
    const s = this.sessions.get(sessionId);
    return s && { workspaceId: 'wrkspc_test', generation: s.generation, mounts: [...s.mounts] };
  }
  async generation(sessionId: string) {
    return this.sessions.get(sessionId)?.generation;
  }
  async fileContent(_workspaceId: string, fileId: string) {
    const f = this.files.get(fileId);
    if (!f) throw new Error(`file ${fileId} was deleted`);
    return f;
  }
  async memories(storeId: string) {
    return [...(this.stores.get(storeId) ?? new Map<string, Buffer>())].map(([path, content]) => ({
      path,
      content,
      sha256: sha(content),
    }));
  }
  async writeMemory(w: Parameters<MountData['writeMemory']>[0]): Promise<MemoryWrite> {
    this.writes.push({ path: w.path, content: w.content, expectedSha256: w.expectedSha256 });
    const store = this.stores.get(w.storeId)!;
    const current = store.get(w.path);
    if ((current ? sha(current) : null) !== w.expectedSha256)
      return { ok: false, reason: 'precondition', currentSha256: current ? sha(current) : null };
    if (w.content.includes('FORBIDDEN')) return { ok: false, reason: 'invalid', message: 'the content is refused' };
    store.set(w.path, Buffer.from(w.content));
    return { ok: true, sha256: sha(w.content) };
  }
  async deleteMemory(d: Parameters<MountData['deleteMemory']>[0]): Promise<MemoryWrite> {
    this.deletes.push({ path: d.path, expectedSha256: d.expectedSha256 });
    const store = this.stores.get(d.storeId)!;
    const current = store.get(d.path);
    if (!current || sha(current) !== d.expectedSha256)
      return { ok: false, reason: 'precondition', currentSha256: current ? sha(current) : null };
    store.delete(d.path);
    return { ok: true, sha256: d.expectedSha256 };
  }
  async skillFiles(_workspaceId: string, skillId: string, version: string) {
    return this.skills.get(`${skillId}@${version}`) ?? [];
  }
  async saveOutput(o: Parameters<MountData['saveOutput']>[0]) {
    this.outputs.push({ sessionId: o.sessionId, relativePath: o.relativePath, content: o.content.toString() });
    return { fileId: `file_${this.outputs.length}` };
  }
}

let h: Harness;
let d: Docker;
const data = new MemoryMountData();
const HOST = `test-mounts-${process.pid}`;
beforeAll(async () => {
  d = await docker();
  h = await startHarness({ role: 'all', hostId: HOST, mountData: data });
});
afterAll(async () => {
  await h?.stop();
});

let n = 0;
const unique = (p: string) => `${p}_${process.pid}_${++n}`;

describe('files and skills', () => {
  it('mounts a file read-only: the agent reads it, and its write is refused', async () => {
    const handle = await startSession(h);
    const fileId = unique('file');
    data.files.set(fileId, Buffer.from('hello from the file\n'));
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId,
      mountPath: `/mnt/session/uploads/${fileId}`,
    });
    const read = await bash(
      h,
      handle,
      `cat /mnt/session/uploads/${fileId}; stat -c '%U %a' /mnt/session/uploads/${fileId}`,
    );
    expect(read.output).toBe('hello from the file\nroot 444\n[exit 0]');
    const write = await bash(h, handle, `echo changed > /mnt/session/uploads/${fileId}`);
    expect(write.output).toMatch(/Permission denied/);
    expect(write.isError).toBe(true);
    const remove = await bash(h, handle, `rm -f /mnt/session/uploads/${fileId}`);
    expect(remove.output).toMatch(/Permission denied/);
    expect((await bash(h, handle, `cat /mnt/session/uploads/${fileId}`)).output).toBe('hello from the file\n[exit 0]');
    await handle.signal(endSignal, {});
  });

  it('mounts a skill with its scripts executable and nothing writable', async () => {
    const handle = await startSession(h);
    const skillId = unique('skill');
    data.skills.set(`${skillId}@1`, [
      { path: 'SKILL.md', content: Buffer.from('---\nname: greet\n---\nSay hi.\n'), executable: false },
      { path: 'scripts/hi.sh', content: Buffer.from('#!/bin/sh\necho hi from the skill\n'), executable: true },
    ]);
    data.mount(handle.workflowId, { kind: 'skill', skillId, version: '1', mountPath: '/mnt/skills/greet' });
    const r = await bash(
      h,
      handle,
      '/mnt/skills/greet/scripts/hi.sh && head -2 /mnt/skills/greet/SKILL.md && touch /mnt/skills/greet/new',
    );
    expect(r.output).toMatch(/^hi from the skill\n---\nname: greet\n.*Permission denied/s);
    await handle.signal(endSignal, {});
  });

  it('a file deleted before the sandbox is provisioned fails the tool call with a clear message', async () => {
    const handle = await startSession(h);
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId: 'file_gone',
      mountPath: '/mnt/session/uploads/file_gone',
    });
    const r = await bash(h, handle, 'echo never');
    expect(r.isError).toBe(true);
    expect(r.output).toMatch(
      /cannot mount file file_gone at \/mnt\/session\/uploads\/file_gone: file file_gone was deleted/,
    );
    expect(await sessionContainers(d, handle.workflowId)).toHaveLength(0);
    await handle.signal(endSignal, {});
  });
});

describe('outputs', () => {
  it('collects new and changed outputs after each tool call, subdirectories included, unchanged ones once', async () => {
    const handle = await startSession(h);
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId: 'file_seed',
      mountPath: '/mnt/session/uploads/seed',
    });
    data.files.set('file_seed', Buffer.from('seed'));
    const mine = () => data.outputs.filter((o) => o.sessionId === handle.workflowId);
    const first = await bash(
      h,
      handle,
      'stat -c %U /mnt/session/outputs && mkdir -p /mnt/session/outputs/charts && echo one > /mnt/session/outputs/report.txt && echo two > /mnt/session/outputs/charts/a.csv',
    );
    expect(first.output).toBe('agent\n[exit 0]');
    expect(mine()).toEqual(
      expect.arrayContaining([
        { sessionId: handle.workflowId, relativePath: 'report.txt', content: 'one\n' },
        { sessionId: handle.workflowId, relativePath: 'charts/a.csv', content: 'two\n' },
      ]),
    );
    expect(mine()).toHaveLength(2);
    await bash(h, handle, 'echo changed > /mnt/session/outputs/report.txt');
    expect(mine()).toHaveLength(3);
    expect(mine()[2]).toEqual({ sessionId: handle.workflowId, relativePath: 'report.txt', content: 'changed\n' });
    // Touched but the same bytes: not saved again.
    await bash(h, handle, 'touch /mnt/session/outputs/charts/a.csv && echo idle');
    expect(mine()).toHaveLength(3);
    await handle.signal(endSignal, {});
  });

  it('skips a link planted in outputs with a note, and reads nothing through it', async () => {
    const handle = await startSession(h);
    data.files.set('file_seed', Buffer.from('seed'));
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId: 'file_seed',
      mountPath: '/mnt/session/uploads/seed',
    });
    const r = await bash(
      h,
      handle,
      'ln -s /etc/passwd /mnt/session/outputs/passwd && mkfifo /mnt/session/outputs/pipe && echo planted',
    );
    expect(r.output).toMatch(/^planted\n\[exit 0\]\n\n/);
    expect(r.output).toMatch(
      /\/mnt\/session\/outputs\/passwd was not collected: it is a link, and only regular files are\./,
    );
    expect(r.output).toMatch(/\/mnt\/session\/outputs\/pipe was not collected: it is a fifo/);
    expect(data.outputs.filter((o) => o.sessionId === handle.workflowId)).toEqual([]);
    expect(data.outputs.some((o) => o.content.includes('root:'))).toBe(false);
    // Noted once, not on every call.
    expect((await bash(h, handle, 'echo again')).output).toBe('again\n[exit 0]');
    await handle.signal(endSignal, {});
  });
});

describe('at the end', () => {
  it('collects what a process left running wrote after the last tool call, and its memory change, when the sandbox goes', async () => {
    const handle = await startSession(h);
    const store = unique('memstore');
    data.stores.set(store, new Map([['/log.md', Buffer.from('start\n')]]));
    data.mount(handle.workflowId, {
      kind: 'memory_store',
      resourceId: unique('sesrsc'),
      storeId: store,
      mountPath: '/mnt/memory/log',
      access: 'read_write',
    });
    const r = await bash(
      h,
      handle,
      // Written later, once the test says so: after this call has returned and its collection has run.
      '(while [ ! -e /tmp/go ]; do sleep 0.1; done; echo late > /mnt/session/outputs/late.txt; echo late >> /mnt/memory/log/log.md; touch /tmp/done) > /dev/null 2>&1 & echo started',
    );
    expect(r.output).toBe('started\n[exit 0]');
    expect(data.outputs.filter((o) => o.sessionId === handle.workflowId)).toEqual([]);
    // The process writes now, from outside the session: no tool call of the session follows it.
    const provider = new DockerSandboxProvider({
      dockerHost: (await resolveDockerHost())!,
      defaultImage: sandboxImage(),
    });
    const [container] = await sessionContainers(d, handle.workflowId, false);
    const go = await provider.execute(container.Id, {
      key: unique('k'),
      script: 'touch /tmp/go; while [ ! -e /tmp/done ]; do sleep 0.1; done; echo written',
      timeoutSeconds: 60,
      maxOutputBytes: 4096,
    });
    expect(go.output).toMatch(/written/);
    expect(data.outputs.filter((o) => o.sessionId === handle.workflowId)).toEqual([]);
    await handle.signal(endSignal, {});
    await handle.result();
    expect(data.outputs.filter((o) => o.sessionId === handle.workflowId)).toEqual([
      { sessionId: handle.workflowId, relativePath: 'late.txt', content: 'late\n' },
    ]);
    expect(data.stores.get(store)!.get('/log.md')!.toString()).toBe('start\nlate\n');
    expect(await sessionContainers(d, handle.workflowId)).toHaveLength(0);
  });
});

describe('memory stores', () => {
  it('a read_only store refuses writes; a read_write store saves a change with the base it was read at', async () => {
    const handle = await startSession(h);
    const ro = unique('memstore');
    const rw = unique('memstore');
    data.stores.set(ro, new Map([['/rules.md', Buffer.from('be kind\n')]]));
    data.stores.set(rw, new Map([['/notes/a.md', Buffer.from('first\n')]]));
    data.mount(
      handle.workflowId,
      {
        kind: 'memory_store',
        resourceId: unique('sesrsc'),
        storeId: ro,
        mountPath: '/mnt/memory/rules',
        access: 'read_only',
      },
      {
        kind: 'memory_store',
        resourceId: unique('sesrsc'),
        storeId: rw,
        mountPath: '/mnt/memory/notes',
        access: 'read_write',
      },
    );
    const refused = await bash(h, handle, 'cat /mnt/memory/rules/rules.md; echo no >> /mnt/memory/rules/rules.md');
    expect(refused.output).toMatch(/^be kind\n.*Permission denied/s);
    expect(data.stores.get(ro)!.get('/rules.md')!.toString()).toBe('be kind\n');

    await bash(h, handle, 'echo second >> /mnt/memory/notes/notes/a.md && echo new > /mnt/memory/notes/b.md');
    expect(data.writes.filter((w) => w.path === '/notes/a.md')).toEqual([
      { path: '/notes/a.md', content: 'first\nsecond\n', expectedSha256: sha('first\n') },
    ]);
    expect(data.writes.filter((w) => w.path === '/b.md')).toEqual([
      { path: '/b.md', content: 'new\n', expectedSha256: null },
    ]);
    expect(data.stores.get(rw)!.get('/notes/a.md')!.toString()).toBe('first\nsecond\n');

    // A deletion is a delete with the last base as its precondition.
    await bash(h, handle, 'rm /mnt/memory/notes/b.md');
    expect(data.deletes).toContainEqual({ path: '/b.md', expectedSha256: sha('new\n') });
    expect(data.stores.get(rw)!.has('/b.md')).toBe(false);
    await handle.signal(endSignal, {});
  });

  it('a change to a memory another session changed since is refused, explained, and replaced by the current content', async () => {
    const handle = await startSession(h);
    const store = unique('memstore');
    data.stores.set(store, new Map([['/plan.md', Buffer.from('v1\n')]]));
    data.mount(handle.workflowId, {
      kind: 'memory_store',
      resourceId: unique('sesrsc'),
      storeId: store,
      mountPath: '/mnt/memory/plan',
      access: 'read_write',
    });
    expect((await bash(h, handle, 'cat /mnt/memory/plan/plan.md')).output).toBe('v1\n[exit 0]');
    // Another session writes v2 meanwhile.
    data.stores.get(store)!.set('/plan.md', Buffer.from('v2 from elsewhere\n'));
    const r = await bash(h, handle, 'echo mine > /mnt/memory/plan/plan.md');
    expect(r.output).toContain(
      "Memory /mnt/memory/plan/plan.md was changed by another session since you last read it, so your change was not saved. /mnt/memory/plan/plan.md now holds the store's current content: read it again, then make your change again if it still applies.",
    );
    expect(data.stores.get(store)!.get('/plan.md')!.toString()).toBe('v2 from elsewhere\n');
    expect((await bash(h, handle, 'cat /mnt/memory/plan/plan.md')).output).toBe('v2 from elsewhere\n[exit 0]');
    // The retry goes through, on the new base.
    await bash(h, handle, 'echo merged >> /mnt/memory/plan/plan.md');
    expect(data.stores.get(store)!.get('/plan.md')!.toString()).toBe('v2 from elsewhere\nmerged\n');

    // A refused content says why, once.
    const invalid = await bash(h, handle, 'echo FORBIDDEN > /mnt/memory/plan/bad.md');
    expect(invalid.output).toContain('Memory /mnt/memory/plan/bad.md was not saved: the content is refused');
    expect((await bash(h, handle, 'echo quiet')).output).toBe('quiet\n[exit 0]');
    await handle.signal(endSignal, {});
  });
});

describe('the built-in file tools', () => {
  it('read an upload, write an output that is collected, change a memory, and say so when a mount is read-only', async () => {
    const handle = await startSession(h, { agent: { tools: ['bash', 'read', 'write', 'edit', 'glob', 'grep'] } });
    const fileId = unique('file');
    const ro = unique('memstore');
    const rw = unique('memstore');
    data.files.set(fileId, Buffer.from('region,amount\nnorth,12\n'));
    data.stores.set(ro, new Map([['/rules.md', Buffer.from('be kind\n')]]));
    data.stores.set(rw, new Map([['/plan.md', Buffer.from('step one\n')]]));
    data.mount(
      handle.workflowId,
      { kind: 'file', resourceId: unique('sesrsc'), fileId, mountPath: `/mnt/session/uploads/${fileId}` },
      {
        kind: 'memory_store',
        resourceId: unique('sesrsc'),
        storeId: ro,
        mountPath: '/mnt/memory/rules',
        access: 'read_only',
      },
      {
        kind: 'memory_store',
        resourceId: unique('sesrsc'),
        storeId: rw,
        mountPath: '/mnt/memory/plan',
        access: 'read_write',
      },
    );
    const call = (tool: string, input: Record<string, unknown>) => callTool(h, handle, tool, input);

    expect(await call('read', { file_path: `/mnt/session/uploads/${fileId}` })).toMatchObject({
      output: 'region,amount\nnorth,12\n',
      isError: false,
    });
    expect(await call('grep', { pattern: 'north', path: '/mnt/session/uploads' })).toMatchObject({
      output: `/mnt/session/uploads/${fileId}:2:north,12`,
      isError: false,
    });
    expect(await call('write', { file_path: '/mnt/session/outputs/report.txt', content: 'total 12\n' })).toMatchObject({
      output: 'wrote 9 bytes to /mnt/session/outputs/report.txt',
      isError: false,
    });
    expect(data.outputs.filter((o) => o.sessionId === handle.workflowId)).toEqual([
      { sessionId: handle.workflowId, relativePath: 'report.txt', content: 'total 12\n' },
    ]);
    expect(
      await call('edit', { file_path: '/mnt/memory/plan/plan.md', old_string: 'one', new_string: 'two' }),
    ).toMatchObject({ isError: false });
    expect(data.stores.get(rw)!.get('/plan.md')!.toString()).toBe('step two\n');

    const refused = [
      await call('write', { file_path: '/mnt/memory/rules/rules.md', content: 'be quick\n' }),
      await call('edit', { file_path: '/mnt/memory/rules/rules.md', old_string: 'kind', new_string: 'quick' }),
      await call('write', { file_path: `/mnt/session/uploads/${fileId}`, content: 'x' }),
      await call('write', { file_path: '/mnt/memory/rules/new.md', content: 'x' }),
    ];
    expect(refused.map((r) => [r.output, r.isError])).toEqual([
      ['write: cannot write /mnt/memory/rules/rules.md: it is in a read-only mount', true],
      ['edit: cannot write /mnt/memory/rules/rules.md: it is in a read-only mount', true],
      [`write: cannot write /mnt/session/uploads/${fileId}: it is in a read-only mount`, true],
      ['write: cannot write /mnt/memory/rules/new.md: it is in a read-only mount', true],
    ]);
    expect(data.stores.get(ro)!.get('/rules.md')!.toString()).toBe('be kind\n');
    expect(data.stores.get(ro)!.has('/new.md')).toBe(false);
    // Outside the workspace and /mnt is still out of reach.
    expect(await call('read', { file_path: '/etc/passwd' })).toMatchObject({
      output: 'read: /etc/passwd is outside the workspace /workspace and the mounts under /mnt',
      isError: true,
    });
    await handle.signal(endSignal, {});
  });
});

describe('mounts over a session', () => {
  it('a mount added mid-session is there before the next tool runs, and one removed is gone', async () => {
    const handle = await startSession(h);
    data.files.set('file_a', Buffer.from('a'));
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId: 'file_a',
      mountPath: '/mnt/session/uploads/a',
    });
    expect((await bash(h, handle, 'ls /mnt/session/uploads')).output).toBe('a\n[exit 0]');
    const fileId = unique('file');
    data.files.set(fileId, Buffer.from('added later'));
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId,
      mountPath: '/workspace/data/later.txt',
    });
    expect((await bash(h, handle, 'cat /workspace/data/later.txt')).output).toBe('added later\n[exit 0]');
    // A mount removed is gone before the next tool runs; the others stay.
    data.unmount(handle.workflowId, '/mnt/session/uploads/a');
    expect((await bash(h, handle, 'ls /mnt/session/uploads; cat /workspace/data/later.txt')).output).toBe(
      'added later\n[exit 0]',
    );
    await handle.signal(endSignal, {});
  });

  it('a sandbox lost and provisioned again gets its mounts back', async () => {
    const handle = await startSession(h);
    const fileId = unique('file');
    data.files.set(fileId, Buffer.from('still here\n'));
    data.mount(handle.workflowId, {
      kind: 'file',
      resourceId: unique('sesrsc'),
      fileId,
      mountPath: `/mnt/session/uploads/${fileId}`,
    });
    await bash(h, handle, `cat /mnt/session/uploads/${fileId}`);
    const [container] = await sessionContainers(d, handle.workflowId, false);
    await d.getContainer(container.Id).remove({ force: true, v: true });
    const lost = await bash(h, handle, 'echo x');
    expect(lost).toMatchObject({ isError: true, error: { kind: 'infra' } });
    const again = await bash(h, handle, `cat /mnt/session/uploads/${fileId}; stat -c %U /mnt/session/outputs`);
    expect(again.output).toBe('still here\nagent\n[exit 0]');
    const provisioned = (await allEvents(handle)).filter((e) => e.type === 'sandbox_provisioned');
    expect(provisioned).toHaveLength(2);
    await handle.signal(endSignal, {});
  });
});

describe('the provider under each runtime', () => {
  // The harness runs what SANDBOX_RUNTIME picks (gVisor where the engine has it); runc is checked here directly.
  it.each(['runc', 'runsc'] as const)(
    'root-owned read-only files refuse the sandbox user under %s',
    async (runtime) => {
      const provider = new DockerSandboxProvider({
        dockerHost: (await resolveDockerHost())!,
        defaultImage: sandboxImage(),
        runtime,
      });
      const sessionId = unique('ses');
      const { AgentSchema } = await import('../src/session/agent');
      const recipe = AgentSchema.parse({ name: 't', model: 'm', sandboxes: { main: {} } }).sandboxes.main;
      const p = await provider.provision({ sessionId, name: 'main', recipe, hostId: HOST });
      try {
        await provider.putTree(p.sandboxId, '/mnt', [
          { type: 'dir', path: 'ro', uid: 0, mode: 0o555 },
          { type: 'file', path: 'ro/f.txt', uid: 0, mode: 0o444, content: Buffer.from('locked') },
          { type: 'dir', path: 'rw', uid: 1000, mode: 0o755 },
        ]);
        const r = await provider.execute(p.sandboxId, {
          key: unique('k'),
          script:
            'cat /mnt/ro/f.txt; echo; echo x > /mnt/ro/f.txt; chmod 666 /mnt/ro/f.txt; touch /mnt/ro/new; echo ok > /mnt/rw/f && echo wrote',
          timeoutSeconds: 30,
          maxOutputBytes: 4096,
        });
        expect(r.output).toMatch(/^locked\n/);
        expect(r.output.match(/Permission denied|Operation not permitted/g)).toHaveLength(3);
        expect(r.output).toMatch(/wrote\n$/);
        const scan = await provider.scanFiles(p.sandboxId, ['/mnt/rw', '/mnt/ro'], {});
        expect(scan.files.map((f) => [f.path, f.content?.toString()])).toEqual([
          ['/mnt/rw/f', 'ok\n'],
          ['/mnt/ro/f.txt', 'locked'],
        ]);
      } finally {
        await provider.destroy(p.sandboxId);
      }
    },
  );
});

describe('a restarted worker', () => {
  it('carries on from what the last one recorded: no rewrite over the agent’s change, which is saved on its base', async () => {
    const provider = new DockerSandboxProvider({
      dockerHost: (await resolveDockerHost())!,
      defaultImage: sandboxImage(),
    });
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mount-state-'));
    const sessionId = unique('ses');
    const store = unique('memstore');
    data.stores.set(store, new Map([['/a.md', Buffer.from('one\n')]]));
    data.mount(sessionId, {
      kind: 'memory_store',
      resourceId: unique('sesrsc'),
      storeId: store,
      mountPath: '/mnt/memory/m',
      access: 'read_write',
    });
    const { AgentSchema } = await import('../src/session/agent');
    const recipe = AgentSchema.parse({ name: 't', model: 'm', sandboxes: { main: {} } }).sandboxes.main;
    const p = await provider.provision({ sessionId, name: 'main', recipe, hostId: HOST });
    try {
      await sessionMountsHands(provider, data, stateDir).provisioned(sessionId, p.sandboxId);
      const r = await provider.execute(p.sandboxId, {
        key: unique('k'),
        script: 'echo two > /mnt/memory/m/a.md',
        timeoutSeconds: 30,
        maxOutputBytes: 4096,
      });
      expect(r.exitCode).toBe(0);
      const restarted = sessionMountsHands(provider, data, stateDir);
      await restarted.beforeTool(sessionId, p.sandboxId);
      expect(await restarted.afterTool(sessionId, p.sandboxId)).toBe('');
      expect(data.writes.at(-1)).toEqual({ path: '/a.md', content: 'two\n', expectedSha256: sha('one\n') });
      expect(data.stores.get(store)!.get('/a.md')!.toString()).toBe('two\n');
      // A call that changed nothing writes nothing: no version, and the state file is left as it is.
      const file = path.join(stateDir, `${p.sandboxId}.json`);
      const { ino } = fs.statSync(file);
      const writes = data.writes.length;
      expect(await restarted.afterTool(sessionId, p.sandboxId)).toBe('');
      expect(fs.statSync(file).ino).toBe(ino);
      expect(data.writes.length).toBe(writes);
    } finally {
      await provider.destroy(p.sandboxId);
      fs.rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
