// client.beta.skills and their versions: bundles from several files, a zip or a tar.gz, downloads that unpack to the
// same bytes, every refused upload leaving no row and no blob behind, and agents that name custom skills.
import { gzipSync } from 'node:zlib';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { strToU8, unzipSync, zipSync, type Zippable } from 'fflate';
import { pack, type Header } from 'tar-stream';
import { listAudit } from '../../src/api/audit';
import { BlobStore } from '../../src/storage/blobs';
import { resolveSkillVersion, skillVersionFiles } from '../../src/storage/repos/skills-repo';
import { startTestApi, type TestApi } from '../helpers/api';
import { testDataConverter } from '../helpers/test-keys';

const SKILL_MD = (name: string | null, description = 'Turns CSV files into charts.') =>
  `---\n${name ? `name: ${name}\n` : ''}description: ${description}\n---\n\n# ${name ?? 'skill'}\n\nRun scripts/run.py.\n`;

/** A skill's files by path inside its directory. */
const FILES: Record<string, Buffer> = {
  'SKILL.md': Buffer.from(SKILL_MD('csv-charts')),
  'scripts/run.py': Buffer.from('#!/usr/bin/env python3\nprint("chart")\n'),
  'reference/notes.txt': Buffer.from('plain notes\n'),
  'assets/blob.bin': Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919) % 256)),
};

function zipOf(entries: Record<string, Buffer | string>): Buffer {
  const tree: Zippable = {};
  for (const [p, c] of Object.entries(entries)) tree[p] = typeof c === 'string' ? strToU8(c) : new Uint8Array(c);
  return Buffer.from(zipSync(tree));
}

async function tarOf(
  entries: Array<Partial<Header> & { name: string; content?: Buffer | string }>,
  gzip = true,
): Promise<Buffer> {
  const p = pack();
  for (const { content, ...h } of entries) {
    if (content === undefined) p.entry(h);
    else p.entry(h, typeof content === 'string' ? Buffer.from(content) : content);
  }
  p.finalize();
  const parts: Buffer[] = [];
  for await (const c of p) parts.push(c as Buffer);
  const tar = Buffer.concat(parts);
  return gzip ? gzipSync(tar) : tar;
}

const under = (dir: string, files: Record<string, Buffer>) =>
  Object.fromEntries(Object.entries(files).map(([p, c]) => [`${dir}/${p}`, c]));

const parts = async (files: Record<string, Buffer | string>) =>
  Promise.all(Object.entries(files).map(([p, c]) => toFile(Buffer.from(c), p)));

/** The zip with `name`'s uncompressed size in its central directory set to 10 bytes. */
function understating(zip: Buffer, name: string): Buffer {
  const out = Buffer.from(zip);
  for (let i = 0; i + 46 <= out.length; i++) {
    if (out.readUInt32LE(i) !== 0x02014b50) continue;
    const n = out.readUInt16LE(i + 28);
    if (out.subarray(i + 46, i + 46 + n).toString() === name) out.writeUInt32LE(10, i + 24);
  }
  return out;
}

/** Every file of a downloaded zip, by path. */
function unzipped(buf: Buffer): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(unzipSync(new Uint8Array(buf))).map(([p, c]) => [p, Buffer.from(c)]));
}

describe('skills on postgres', () => {
  let api: TestApi;
  let client: Anthropic;
  let blobs: BlobStore;
  beforeAll(async () => {
    api = await startTestApi('postgres', ['default', 'other']);
    client = await api.client();
    blobs = new BlobStore(api.db!, testDataConverter());
  });
  afterAll(async () => api?.stop());

  const counts = async () => {
    const [row] = await api.db!.query<{ blobs: number; skills: number; versions: number; files: number }>(
      `select (select count(*)::int from blobs) as blobs, (select count(*)::int from skills) as skills,
              (select count(*)::int from skill_versions) as versions, (select count(*)::int from skill_files) as files`,
    );
    return row;
  };

  const download = async (skillId: string, version: string) => {
    const res = await client.beta.skills.versions.download(version, { skill_id: skillId });
    expect(res.headers.get('content-type')).toBe('application/zip');
    return unzipped(Buffer.from(await res.arrayBuffer()));
  };

  it('creates a skill from several files and downloads the same bytes back', async () => {
    const skill = await client.beta.skills.create({ files: await parts(under('csv-charts', FILES)) });
    expect(skill).toMatchObject({ type: 'skill', display_name: 'csv-charts', source: { type: 'custom' } });
    expect(skill.id).toMatch(/^skill_/);
    expect(skill.latest_version_id).toMatch(/^\d{16}$/);
    expect(await client.beta.skills.retrieve(skill.id)).toEqual(skill);

    const v = await client.beta.skills.versions.retrieve('latest', { skill_id: skill.id });
    expect(v).toMatchObject({
      type: 'skill_version',
      id: skill.latest_version_id,
      skill_id: skill.id,
      name: 'csv-charts',
      description: 'Turns CSV files into charts.',
    });
    expect(await download(skill.id, v.id)).toEqual(under('csv-charts', FILES));

    // What mounting reads: the directory, and each file with its mode (a #! script runs).
    expect(await resolveSkillVersion(api.db!, 'wrkspc_default', skill.id, 'latest')).toEqual({
      skillId: skill.id,
      version: v.id,
      name: 'csv-charts',
      description: 'Turns CSV files into charts.',
      directory: 'csv-charts',
    });
    const files = await skillVersionFiles(api.db!, blobs, skill.id, v.id);
    expect(Object.fromEntries(files.map((f) => [f.path, f.content]))).toEqual(FILES);
    expect(files.filter((f) => f.executable).map((f) => f.path)).toEqual(['scripts/run.py']);
  });

  it('creates a skill from a zip, with a display name', async () => {
    const skill = await client.beta.skills.create({
      display_name: 'CSV charts (zip)',
      files: [await toFile(zipOf(under('csv-charts', FILES)), 'csv-charts.zip')],
    });
    expect(skill.display_name).toBe('CSV charts (zip)');
    expect(await download(skill.id, skill.latest_version_id)).toEqual(under('csv-charts', FILES));
  });

  it('creates a skill from a tar.gz with SKILL.md at its root, named by its frontmatter', async () => {
    const tgz = await tarOf([
      { name: './', type: 'directory', mode: 0o755 },
      ...Object.entries(FILES).map(([p, c]) => ({
        name: `./${p}`,
        mode: p === 'reference/notes.txt' ? 0o755 : 0o644,
        content: c,
      })),
    ]);
    const skill = await client.beta.skills.create({ files: [await toFile(tgz, 'bundle.tgz')] });
    expect(skill.display_name).toBe('csv-charts');
    expect(await download(skill.id, 'latest')).toEqual(under('csv-charts', FILES));
    const files = await skillVersionFiles(api.db!, blobs, skill.id, skill.latest_version_id);
    expect(files.filter((f) => f.executable).map((f) => f.path)).toEqual(['reference/notes.txt']);
  });

  it('adds, lists, retrieves and deletes versions; latest follows the newest', async () => {
    const skill = await client.beta.skills.create({ files: await parts(under('csv-charts', FILES)) });
    const changed = { ...FILES, 'SKILL.md': Buffer.from(SKILL_MD('csv-charts', 'Second take.')), 'extra.md': 'x' };
    const v2 = await client.beta.skills.versions.create(skill.id, {
      files: [
        await toFile(
          await tarOf(
            Object.entries(under('csv-charts', changed as unknown as Record<string, Buffer>)).map(
              ([name, content]) => ({
                name,
                content,
              }),
            ),
          ),
          'v2.tar.gz',
        ),
      ],
    });
    expect(v2).toMatchObject({ skill_id: skill.id, name: 'csv-charts', description: 'Second take.' });
    expect(BigInt(v2.id) > BigInt(skill.latest_version_id)).toBe(true);
    expect((await client.beta.skills.retrieve(skill.id)).latest_version_id).toBe(v2.id);
    expect((await client.beta.skills.versions.retrieve('latest', { skill_id: skill.id })).id).toBe(v2.id);

    const ids: string[] = [];
    for await (const v of client.beta.skills.versions.list(skill.id, { limit: 1 })) ids.push(v.id);
    expect(ids).toEqual([v2.id, skill.latest_version_id]);
    expect(Object.keys(await download(skill.id, v2.id))).toContain('csv-charts/extra.md');
    expect(await download(skill.id, skill.latest_version_id)).toEqual(under('csv-charts', FILES));

    // Every later version must resolve to the skill's name.
    const renamed = await client.beta.skills.versions
      .create(skill.id, {
        files: await parts(under('other-name', { 'SKILL.md': Buffer.from(SKILL_MD('other-name')) })),
      })
      .catch((e: unknown) => e);
    expect(renamed).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((renamed as Error).message)).toMatch(/must be the skill's name csv-charts/);

    const before = await counts();
    expect(await client.beta.skills.versions.delete(v2.id, { skill_id: skill.id })).toEqual({
      id: v2.id,
      type: 'skill_version_deleted',
    });
    const after = await counts();
    // The version's five files and its zip.
    expect(before.blobs - after.blobs).toBe(6);
    expect((await client.beta.skills.retrieve(skill.id)).latest_version_id).toBe(skill.latest_version_id);
    await expect(client.beta.skills.versions.retrieve(v2.id, { skill_id: skill.id })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    // A skill keeps at least one version: the last one goes with the skill.
    await expect(
      client.beta.skills.versions.delete(skill.latest_version_id, { skill_id: skill.id }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    expect(await client.beta.skills.delete(skill.id)).toEqual({ id: skill.id, type: 'skill_deleted' });
    expect((await counts()).blobs).toBe(after.blobs - 5);
    const trail = (await listAudit(api.db!, { limit: 1000 })).filter((r) => [skill.id, v2.id].includes(r.resource_id));
    expect(trail.map((r) => [r.action, r.resource_type, r.parent_id])).toEqual([
      ['created', 'skill', null],
      ['created', 'skill_version', skill.id],
      ['deleted', 'skill_version', skill.id],
      ['deleted', 'skill', null],
    ]);
    await expect(client.beta.skills.retrieve(skill.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('lists the workspace own skills only, filtered by source', async () => {
    const other = await api.client('other');
    const mine = await other.beta.skills.create({ files: await parts(under('csv-charts', FILES)) });
    const ids: string[] = [];
    for await (const s of other.beta.skills.list({ limit: 1 })) ids.push(s.id);
    expect(ids).toEqual([mine.id]);
    expect((await other.beta.skills.list({ source: 'custom' })).data.map((s) => s.id)).toEqual([mine.id]);
    expect((await other.beta.skills.list({ source: 'anthropic' })).data).toEqual([]);
    await expect(other.beta.skills.list({ source: 'nope' })).rejects.toBeInstanceOf(Anthropic.BadRequestError);
    await expect(client.beta.skills.retrieve(mine.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('refuses each bad upload with a 400, storing nothing', async () => {
    const md = Buffer.from(SKILL_MD('csv-charts'));
    const zeros = Buffer.alloc(24 * 1024 * 1024);
    const cases: Array<[string, () => Promise<Array<Awaited<ReturnType<typeof toFile>>>>, RegExp]> = [
      ['not an archive', async () => [await toFile(Buffer.from('hello'), 'x.zip')], /not a zip archive/],
      [
        'a truncated zip',
        async () => [await toFile(zipOf(under('csv-charts', FILES)).subarray(0, 200), 's.zip')],
        /not a valid zip/,
      ],
      ['a tar of garbage', async () => [await toFile(Buffer.alloc(1024, 7), 's.tar')], /not a valid tar/],
      ['a .tgz not gzipped', async () => [await toFile(Buffer.alloc(1024), 's.tgz')], /not gzip/],
      ['zip slip', async () => [await toFile(zipOf({ 'SKILL.md': md, '../evil.sh': 'x' }), 's.zip')], /\.\./],
      [
        'an absolute path',
        async () => [await toFile(zipOf({ 'SKILL.md': md, '/etc/evil': 'x' }), 's.zip')],
        /relative/,
      ],
      ['a backslash', async () => [await toFile(zipOf({ 'SKILL.md': md, 'a\\..\\b': 'x' }), 's.zip')], /backslash/],
      ['a drive letter', async () => [await toFile(zipOf({ 'SKILL.md': md, 'C:/x': 'x' }), 's.zip')], /relative/],
      [
        'a part escaping its directory',
        async () => parts({ 'csv-charts/SKILL.md': md, 'csv-charts/../x': 'x' }),
        /\.\./,
      ],
      [
        'a symlink',
        async () => [
          await toFile(
            await tarOf([
              { name: 'csv-charts/SKILL.md', content: md },
              { name: 'csv-charts/link', type: 'symlink', linkname: '/etc/passwd' },
            ]),
            's.tar.gz',
          ),
        ],
        /links are not allowed/,
      ],
      [
        'a hardlink',
        async () => [
          await toFile(
            await tarOf([
              { name: 'csv-charts/SKILL.md', content: md },
              { name: 'csv-charts/hard', type: 'link', linkname: 'csv-charts/SKILL.md' },
            ]),
            's.tar.gz',
          ),
        ],
        /links are not allowed/,
      ],
      [
        'a device',
        async () => [
          await toFile(
            await tarOf(
              [
                { name: 'csv-charts/SKILL.md', content: md },
                { name: 'csv-charts/null', type: 'character-device', devmajor: 1, devminor: 3 },
              ],
              false,
            ),
            's.tar',
          ),
        ],
        /only regular files/,
      ],
      [
        'a duplicate path',
        async () => [
          await toFile(
            await tarOf([
              { name: 'csv-charts/SKILL.md', content: md },
              { name: 'csv-charts/SKILL.md', content: md },
            ]),
            's.tgz',
          ),
        ],
        /twice/,
      ],
      ['no SKILL.md', async () => parts({ 'csv-charts/README.md': 'x' }), /no SKILL\.md/],
      ['no directory', async () => parts({ 'SKILL.md': md }), /same top-level directory/],
      ['two directories', async () => parts({ 'a/SKILL.md': md, 'b/x': 'x' }), /same top-level directory/],
      ['no frontmatter', async () => parts({ 'csv-charts/SKILL.md': '# hi\n' }), /frontmatter/],
      [
        'no description',
        async () => parts({ 'csv-charts/SKILL.md': '---\nname: csv-charts\n---\n' }),
        /description is required/,
      ],
      [
        'a long description',
        async () => parts({ 'csv-charts/SKILL.md': SKILL_MD('csv-charts', 'x'.repeat(1025)) }),
        /1024/,
      ],
      ['a bad name', async () => parts({ 'Bad_Name/SKILL.md': SKILL_MD('Bad_Name') }), /lowercase/],
      ['a reserved word', async () => parts({ 'claude-tools/SKILL.md': SKILL_MD('claude-tools') }), /reserved/],
      [
        'a name unlike its directory',
        async () => parts({ 'csv-charts/SKILL.md': SKILL_MD('pdf-tools') }),
        /must match its directory/,
      ],
      [
        'too many files',
        async () => [
          await toFile(
            zipOf({
              'csv-charts/SKILL.md': md,
              ...Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`csv-charts/f${i}.txt`, 'x'])),
            }),
            's.zip',
          ),
        ],
        /at most 500 files/,
      ],
      [
        'too many bytes',
        async () => parts({ 'csv-charts/SKILL.md': md, 'csv-charts/big.bin': Buffer.alloc(8 * 1024 * 1024) }),
        /at most 8388608 bytes/,
      ],
      [
        'a zip bomb',
        async () => [await toFile(zipOf({ 'csv-charts/SKILL.md': md, 'csv-charts/zeros': zeros }), 'bomb.zip')],
        /at most 8388608 bytes/,
      ],
      [
        'a zip bomb that understates its size',
        async () => [
          await toFile(
            understating(zipOf({ 'csv-charts/SKILL.md': md, 'csv-charts/zeros': zeros }), 'csv-charts/zeros'),
            'b.zip',
          ),
        ],
        /at most 8388608 bytes/,
      ],
      [
        'a tar.gz bomb',
        async () => [
          await toFile(
            await tarOf([
              { name: 'csv-charts/SKILL.md', content: md },
              { name: 'csv-charts/zeros', content: zeros },
            ]),
            'bomb.tgz',
          ),
        ],
        /at most 8388608 bytes/,
      ],
    ];
    const before = await counts();
    for (const [what, files, message] of cases) {
      const err = await client.beta.skills.create({ files: await files() }).catch((e: unknown) => e);
      expect([what, err]).toEqual([what, expect.any(Anthropic.BadRequestError)]);
      expect([what, (err as Error).message]).toEqual([what, expect.stringMatching(message)]);
    }
    expect(await counts()).toEqual(before);

    // The same refusals on a new version leave the skill as it was.
    const skill = await client.beta.skills.create({ files: await parts(under('csv-charts', FILES)) });
    const withSkill = await counts();
    for (const [what, files, message] of cases.slice(0, 6)) {
      const err = await client.beta.skills.versions.create(skill.id, { files: await files() }).catch((e: unknown) => e);
      expect([what, (err as Error).message]).toEqual([what, expect.stringMatching(message)]);
    }
    expect(await counts()).toEqual(withSkill);
  });

  it('refuses a request that is not the upload the route takes', async () => {
    const key = await api.key();
    const post = (body: string | FormData, headers: Record<string, string> = {}) =>
      fetch(`${api.url}/v1/skills`, { method: 'POST', headers: { 'x-api-key': key, ...headers }, body });
    const json = await post(JSON.stringify({ files: [] }), { 'content-type': 'application/json' });
    expect(json.status).toBe(400);
    const form = new FormData();
    form.append('colour', 'blue');
    form.append('files[]', new Blob([SKILL_MD('csv-charts')]), 'csv-charts/SKILL.md');
    const res = await post(form);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/colour is not a field/);
    const empty = new FormData();
    empty.append('display_name', 'x');
    expect((await post(empty)).status).toBe(400);
    // multipart/form-data without its boundary cannot be read: a 400 that says so.
    const noBoundary = await post('', { 'content-type': 'multipart/form-data' });
    expect(noBoundary.status).toBe(400);
    expect(((await noBoundary.json()) as { error: { message: string } }).error.message).toMatch(/multipart/);
  });

  it('gives agents custom skills, pinned to a version, and refuses what cannot be', async () => {
    const skill = await client.beta.skills.create({ files: await parts(under('csv-charts', FILES)) });
    const v1 = skill.latest_version_id;
    const pdf = await client.beta.skills.create({
      files: await parts({ 'pdf-tools/SKILL.md': SKILL_MD('pdf-tools', 'Reads PDFs.') }),
    });
    const agent = await client.beta.agents.create({
      name: 'with skills',
      model: 'claude-haiku-5-5',
      skills: [
        { type: 'custom', skill_id: skill.id },
        { type: 'custom', skill_id: pdf.id, version: pdf.latest_version_id },
      ],
    });
    expect(agent.skills).toEqual([
      { type: 'custom', skill_id: skill.id, version: v1 },
      { type: 'custom', skill_id: pdf.id, version: pdf.latest_version_id },
    ]);
    expect((await client.beta.agents.retrieve(agent.id)).skills).toEqual(agent.skills);

    // A new skill version reaches the agent when it is updated; `latest` names it.
    const v2 = await client.beta.skills.versions.create(skill.id, { files: await parts(under('csv-charts', FILES)) });
    const updated = await client.beta.agents.update(agent.id, {
      version: agent.version,
      skills: [{ type: 'custom', skill_id: skill.id, version: 'latest' }],
    });
    expect(updated.skills).toEqual([{ type: 'custom', skill_id: skill.id, version: v2.id }]);
    expect((await client.beta.agents.update(agent.id, { version: updated.version, skills: null })).skills).toEqual([]);

    const refused: Array<[Anthropic.Beta.AgentCreateParams['skills'], RegExp]> = [
      [[{ type: 'custom', skill_id: 'skill_nope' }], /skills\.0\.skill_id: no skill skill_nope/],
      [[{ type: 'custom', skill_id: skill.id, version: '123' }], /skills\.0\.version: .* has no version 123/],
      [[{ type: 'anthropic', skill_id: 'xlsx' }], /skills\.0: Anthropic's pre-built skills \(xlsx\) are not available/],
      [
        [
          { type: 'custom', skill_id: skill.id },
          { type: 'custom', skill_id: skill.id },
        ],
        /skills\.1: skill .* is already skills\.0/,
      ],
      [Array.from({ length: 21 }, () => ({ type: 'custom' as const, skill_id: skill.id })), /at most 20 skills/],
    ];
    for (const [skills, message] of refused) {
      const err = await client.beta.agents
        .create({ name: 'refused', model: 'claude-haiku-5-5', skills })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      expect((err as Error).message).toMatch(message);
    }
    // Another workspace's skill is unknown here.
    const other = await api.client('other');
    await expect(
      other.beta.agents.create({
        name: 'x',
        model: 'claude-haiku-5-5',
        skills: [{ type: 'custom', skill_id: skill.id }],
      }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });
});

describe('skills on embedded storage', () => {
  let api: TestApi;
  afterAll(async () => api?.stop());

  it('creates, downloads and deletes a skill', async () => {
    api = await startTestApi('embedded');
    const client = await api.client();
    const skill = await client.beta.skills.create({
      files: [await toFile(zipOf(under('csv-charts', FILES)), 'csv-charts.zip')],
    });
    const res = await client.beta.skills.versions.download('latest', { skill_id: skill.id });
    expect(unzipped(Buffer.from(await res.arrayBuffer()))).toEqual(under('csv-charts', FILES));
    expect(await client.beta.skills.delete(skill.id)).toEqual({ id: skill.id, type: 'skill_deleted' });
  });
});
