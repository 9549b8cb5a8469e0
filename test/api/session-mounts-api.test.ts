// file and memory_store resources through client.beta.sessions: given at create or added later, listed, retrieved
// and deleted with the SDK's shapes, refused with a 400 or 404 naming the field, and the memory section of the
// system prompt. The files and stores themselves come from the Files API and memory stores (client.beta.files,
// client.beta.memoryStores); the cases that need them run where those are part of the build.
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { endSignal } from '../../src/session/contract';
import { promptSections } from '../../src/api/sessions/prompt-sections';
import { slugOf } from '../../src/api/sessions/resource-mounts';

let h: Harness;
let api: TestApi;
let client: Anthropic;
let agentId: string;
let envId: string;

beforeAll(async () => {
  h = await startHarness({ role: 'brain' });
  api = await startApiOn(h, ['default', 'other']);
  client = await api.client();
  agentId = (await client.beta.agents.create({ name: 'mounter', model: 'claude-test' })).id;
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
});

const count = async (table: string) =>
  (await api.db!.query<{ n: number }>(`select count(*)::int as n from ${table}`))[0].n;
const refusal = (p: Promise<unknown>) =>
  p.then(() => undefined).catch((e: unknown) => e as { status: number; message: string });

describe('refusals', () => {
  it('refuses a bad mount_path, an unknown file or store, and long instructions, storing nothing', async () => {
    const [sessionsBefore, mountsBefore] = [
      (await client.beta.sessions.list()).data.length,
      await count('session_mounts'),
    ];
    const cases: [unknown[], number, RegExp][] = [
      [
        [{ type: 'file', file_id: 'file_1', mount_path: '/etc/passwd' }],
        400,
        /resources\.0\.mount_path: .*under \/mnt\/ or \/workspace\//,
      ],
      [[{ type: 'file', file_id: 'file_1', mount_path: 'mnt/x' }], 400, /resources\.0\.mount_path/],
      [[{ type: 'file', file_id: 'file_1', mount_path: '/mnt/a/../b' }], 400, /resources\.0\.mount_path/],
      [[{ type: 'file', file_id: 'file_1', mount_path: '/mnt/a//b' }], 400, /resources\.0\.mount_path/],
      [[{ type: 'file', file_id: 'file_1', mount_path: '/mnt/data/' }], 400, /resources\.0\.mount_path/],
      [
        [{ type: 'file', file_id: 'file_1', mount_path: '/mnt/session/outputs/x' }],
        400,
        /\/mnt\/session\/outputs is the platform's own/,
      ],
      [[{ type: 'file', file_id: 'file_1', mount_path: '/mnt/skills/x' }], 400, /\/mnt\/skills is the platform's own/],
      [[{ type: 'file', file_id: 'file_1', extra: 1 }], 400, /resources\.0.*extra/],
      [
        [{ type: 'memory_store', memory_store_id: 'memstore_1', instructions: 'x'.repeat(4097) }],
        400,
        /resources\.0\.instructions: instructions are at most 4096 characters/,
      ],
      [
        [{ type: 'memory_store', memory_store_id: 'memstore_1', access: 'write' }],
        400,
        /resources\.0\.access: access must be read_write or read_only/,
      ],
      [[{ type: 'file', file_id: 'file_unknown' }], 404, /file file_unknown not found/],
      [[{ type: 'memory_store', memory_store_id: 'memstore_unknown' }], 404, /memory_store memstore_unknown not found/],
    ];
    for (const [resources, status, message] of cases) {
      const err = await refusal(
        client.beta.sessions.create({ agent: agentId, environment_id: envId, resources: resources as never }),
      );
      expect(err).toMatchObject({ status });
      expect(err!.message).toMatch(message);
    }
    expect((await client.beta.sessions.list()).data.length).toBe(sessionsBefore);
    expect(await count('session_mounts')).toBe(mountsBefore);
  });

  it('resources.add takes a file only, checks it like create, and 404s another workspace’s session', async () => {
    const s = await client.beta.sessions.create({ agent: agentId, environment_id: envId });
    const cases: [unknown, number, RegExp][] = [
      [{ type: 'memory_store', memory_store_id: 'memstore_1' }, 400, /resources\.add takes file resources/],
      [{ type: 'file', file_id: 'file_1', mount_path: '/tmp/x' }, 400, /mount_path/],
      [{ type: 'file', file_id: 'file_unknown' }, 404, /file file_unknown not found/],
    ];
    for (const [body, status, message] of cases) {
      const err = await refusal(client.beta.sessions.resources.add(s.id, body as never));
      expect(err).toMatchObject({ status });
      expect(err!.message).toMatch(message);
    }
    const other = await api.client('other');
    expect(await refusal(other.beta.sessions.resources.add(s.id, { type: 'file', file_id: 'file_1' }))).toMatchObject({
      status: 404,
    });
    expect(await refusal(client.beta.sessions.resources.delete('sesrsc_none', { session_id: s.id }))).toMatchObject({
      status: 404,
    });
    expect((await client.beta.sessions.resources.list(s.id)).data).toEqual([]);
    await h.env.client.workflow.getHandle(s.id).signal(endSignal, {});
  });

  it('sessions.list({ memory_store_id }) of a store no session mounts is an empty page', async () => {
    expect(await client.beta.sessions.list({ memory_store_id: 'memstore_none' })).toMatchObject({
      data: [],
      next_page: null,
    });
  });
});

describe('prompt sections and mount paths', () => {
  it('names each store with its path, access and instructions, and each skill with its path and description', () => {
    const text = promptSections({
      stores: [
        {
          mountPath: '/mnt/memory/user-preferences',
          access: 'read_write',
          instructions: 'Keep it short.',
          name: 'User preferences',
        },
        { mountPath: '/mnt/memory/rules', access: 'read_only', instructions: null, name: 'Rules' },
      ],
      skills: [{ name: 'pdf', description: 'Fill PDF forms.', mountPath: '/mnt/skills/pdf' }],
    });
    expect(text).toMatch(/^# Memory\n/);
    expect(text).toContain('## /mnt/memory/user-preferences (read_write)\nStore: User preferences\nKeep it short.');
    expect(text).toContain('## /mnt/memory/rules (read_only)\nStore: Rules');
    expect(text).toContain('# Skills\n');
    expect(text).toContain('- pdf (/mnt/skills/pdf): Fill PDF forms.');
    expect(promptSections({ stores: [], skills: [] })).toBe('');
  });

  it('derives a store’s directory from its name', () => {
    expect(slugOf('User Preferences!')).toBe('user-preferences');
    expect(slugOf('  ../etc  ')).toBe('etc');
    expect(slugOf('日本')).toBe('store');
  });
});

// Files and memory stores are created through their own APIs.
describe('with files and memory stores', () => {
  it('creates, adds, lists, retrieves and deletes file and memory_store resources, and lists sessions by store', async () => {
    const file = await client.beta.files.upload({ file: await toFile(Buffer.from('a,b\n1,2\n'), 'data.csv') });
    const other = await client.beta.files.upload({ file: await toFile(Buffer.from('more'), 'more.txt') });
    const store = await client.beta.memoryStores.create({ name: 'User Preferences', description: 'what they like' });
    const same = await client.beta.memoryStores.create({ name: 'user preferences' });
    const s = await client.beta.sessions.create({
      agent: agentId,
      environment_id: envId,
      resources: [
        { type: 'file', file_id: file.id },
        { type: 'memory_store', memory_store_id: store.id, instructions: 'Record their tastes.' },
        { type: 'memory_store', memory_store_id: same.id, access: 'read_only' },
      ],
    });
    expect(s.resources).toEqual([
      expect.objectContaining({ type: 'file', file_id: file.id, mount_path: `/mnt/session/uploads/${file.id}` }),
      {
        type: 'memory_store',
        memory_store_id: store.id,
        access: 'read_write',
        description: 'what they like',
        instructions: 'Record their tastes.',
        mount_path: '/mnt/memory/user-preferences',
        name: 'User Preferences',
      },
      expect.objectContaining({
        memory_store_id: same.id,
        access: 'read_only',
        mount_path: '/mnt/memory/user-preferences-2',
      }),
    ]);
    const fileResource = s.resources[0] as { id: string };
    const added = await client.beta.sessions.resources.add(s.id, {
      type: 'file',
      file_id: other.id,
      mount_path: '/workspace/inputs/more.txt',
    });
    expect(added).toMatchObject({ type: 'file', file_id: other.id, mount_path: '/workspace/inputs/more.txt' });
    expect(
      await refusal(
        client.beta.sessions.resources.add(s.id, {
          type: 'file',
          file_id: other.id,
          mount_path: '/workspace/inputs/more.txt',
        }),
      ),
    ).toMatchObject({ status: 400 });
    expect((await client.beta.sessions.resources.list(s.id)).data).toHaveLength(4);
    expect(await client.beta.sessions.resources.retrieve(added.id, { session_id: s.id })).toEqual(added);
    expect(await client.beta.sessions.resources.retrieve(store.id, { session_id: s.id })).toMatchObject({
      memory_store_id: store.id,
    });
    expect(
      await refusal(client.beta.sessions.resources.update(added.id, { session_id: s.id, authorization_token: 't' })),
    ).toMatchObject({ status: 400 });
    expect((await client.beta.sessions.list({ memory_store_id: store.id })).data.map((x) => x.id)).toEqual([s.id]);
    expect(await client.beta.sessions.resources.delete(fileResource.id, { session_id: s.id })).toEqual({
      id: fileResource.id,
      type: 'session_resource_deleted',
    });
    expect(await client.beta.sessions.resources.delete(store.id, { session_id: s.id })).toEqual({
      id: store.id,
      type: 'session_resource_deleted',
    });
    expect((await client.beta.sessions.resources.list(s.id)).data).toHaveLength(2);
    expect((await client.beta.sessions.list({ memory_store_id: store.id })).data).toEqual([]);
    // A session deleted for good takes its mounts with it.
    await client.beta.sessions.delete(s.id);
    expect(await api.db!.query('select 1 from session_mounts where session_id = $1', [s.id])).toEqual([]);
    expect(await api.db!.query('select 1 from session_mount_generations where session_id = $1', [s.id])).toEqual([]);
  });
});
