// The archive a pause keeps of a sandbox's home directory (src/hands/sandbox-home.ts): the engine's archive of
// /home/agent, made relative to it and without ~/.cache, every other entry (files with their bytes and modes,
// directories, symbolic and hard links) kept as it was.
import { PassThrough } from 'node:stream';
import tar from 'tar-stream';
import { rehome } from '../src/hands/sandbox-home';

interface Entry {
  name: string;
  type: string;
  mode?: number;
  uid?: number;
  linkname?: string;
  content?: string;
}

/** An archive as the engine's archive call makes one of /home/agent: every path under `agent/`. */
async function engineArchive(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const e of entries) {
    const header = { name: e.name, type: e.type as 'file', mode: e.mode ?? 0o644, uid: 1000, gid: 1000 };
    if (e.content !== undefined) pack.entry({ ...header, size: Buffer.byteLength(e.content) }, e.content);
    else pack.entry({ ...header, ...(e.linkname ? { linkname: e.linkname } : {}) });
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

async function entriesOf(archive: tar.Pack): Promise<Entry[]> {
  const extract = tar.extract();
  const out: Entry[] = [];
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const parts: Buffer[] = [];
      stream.on('data', (c: unknown) => parts.push(c as Buffer));
      stream.on('end', () => {
        out.push({
          name: header.name,
          type: header.type ?? 'file',
          mode: header.mode,
          uid: header.uid,
          ...(header.linkname ? { linkname: header.linkname } : {}),
          ...(header.type === 'file' ? { content: Buffer.concat(parts).toString() } : {}),
        });
        next();
      });
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  for await (const c of archive as AsyncIterable<Buffer>) extract.write(c);
  extract.end(undefined as never);
  await done;
  return out;
}

it('makes the archive relative to the home directory and leaves ~/.cache out', async () => {
  const source = new PassThrough();
  source.end(
    await engineArchive([
      { name: 'agent/', type: 'directory', mode: 0o755 },
      { name: 'agent/.cache/', type: 'directory', mode: 0o755 },
      { name: 'agent/.cache/pip/wheel', type: 'file', content: 'x'.repeat(5000) },
      { name: 'agent/.cachet', type: 'file', content: 'not a cache' },
      { name: 'agent/.local/bin/', type: 'directory', mode: 0o755 },
      { name: 'agent/.local/bin/tool', type: 'file', mode: 0o750, content: '#!/bin/sh\necho hi\n' },
      { name: 'agent/tool-link', type: 'symlink', linkname: '.local/bin/tool' },
      { name: 'agent/tool-hard', type: 'link', linkname: 'agent/.local/bin/tool' },
      { name: 'agent/.tool-output/k.txt', type: 'file', content: 'long output' },
    ]),
  );
  expect(await entriesOf(rehome(source))).toEqual([
    { name: '.cachet', type: 'file', mode: 0o644, uid: 1000, content: 'not a cache' },
    { name: '.local/bin', type: 'directory', mode: 0o755, uid: 1000 },
    { name: '.local/bin/tool', type: 'file', mode: 0o750, uid: 1000, content: '#!/bin/sh\necho hi\n' },
    { name: 'tool-link', type: 'symlink', mode: 0o644, uid: 1000, linkname: '.local/bin/tool' },
    { name: 'tool-hard', type: 'link', mode: 0o644, uid: 1000, linkname: '.local/bin/tool' },
    { name: '.tool-output/k.txt', type: 'file', mode: 0o644, uid: 1000, content: 'long output' },
  ]);
});

it('fails the archive when the engine stream fails', async () => {
  const source = new PassThrough();
  const archive = rehome(source);
  source.destroy(new Error('the engine went away'));
  await expect(entriesOf(archive)).rejects.toThrow('the engine went away');
});
