// A skill upload made into a checked bundle: several files under one top-level directory, or one .zip, .tar,
// .tar.gz or .tgz archive holding such a directory (or SKILL.md at its root). Everything is refused before anything
// is stored: an entry that would land outside the skill's directory, a link or device, a duplicate path, more files
// or bytes than SKILL_LIMITS allows (counted while inflating, so a zip bomb stops at the limit), and a SKILL.md
// without the frontmatter the hosted product requires. The download's zip is built here too.
import { Readable } from 'node:stream';
import { crc32, gunzipSync, inflateRawSync } from 'node:zlib';
import { zipSync, type Zippable } from 'fflate';
import { extract } from 'tar-stream';
import YAML from 'yaml';
import { PlatformError } from '../../session/platform-error';

/** What one skill version may hold (docs/guide/files-memory-skills.md states them). */
export const SKILL_LIMITS = {
  /** Files in a version, SKILL.md included. */
  maxFiles: 500,
  /** All files' bytes together, uncompressed: the hosted product's 8 MB. */
  maxTotalBytes: 8 * 1024 * 1024,
  /** One path inside the skill's directory, in bytes. */
  maxPathBytes: 1024,
  /** One segment of a path, in bytes: what a filesystem takes. */
  maxSegmentBytes: 255,
} as const;

/** The bytes a request's parts may carry together: the files' limit plus room for an archive's own headers. */
export const MAX_UPLOAD_BYTES = SKILL_LIMITS.maxTotalBytes + 2 * 1024 * 1024;

/** An upload the skill cannot be made from; the message says why, for the 400 the user sees. */
export class SkillBundleError extends PlatformError {}

export interface UploadPart {
  /** The part's filename as sent: a path such as `my-skill/SKILL.md`, or an archive's name. */
  filename: string;
  content: Buffer;
}

export interface BundleFile {
  /** Relative to the skill's directory, `/`-separated: `SKILL.md`, `scripts/run.py`. */
  path: string;
  content: Buffer;
  executable: boolean;
}

export interface SkillBundle {
  /** The skill's slug: its directory's name, which is its frontmatter `name` when that is set. */
  name: string;
  description: string;
  files: BundleFile[];
}

const fail = (message: string): never => {
  throw new SkillBundleError(message);
};

const shown = (p: string) => JSON.stringify(p.length > 120 ? `${p.slice(0, 120)}…` : p);

/** An entry as read from the upload: its full path there, and whether its mode says it runs. */
interface RawEntry {
  path: string;
  content: Buffer;
  /** From the archive's mode bits; undefined when the upload carries none (plain file parts). */
  executable?: boolean;
}

/** Counts files and bytes as they are read, so a limit stops the reading rather than judging what was read. */
class Budget {
  files = 0;
  bytes = 0;
  file(): void {
    if (++this.files > SKILL_LIMITS.maxFiles) fail(`a skill holds at most ${SKILL_LIMITS.maxFiles} files`);
  }
  get left(): number {
    return SKILL_LIMITS.maxTotalBytes - this.bytes;
  }
  add(n: number): void {
    this.bytes += n;
    if (this.bytes > SKILL_LIMITS.maxTotalBytes) this.tooLarge();
  }
  tooLarge(): never {
    return fail(`a skill's files hold at most ${SKILL_LIMITS.maxTotalBytes} bytes together, uncompressed`);
  }
}

/**
 * A path as an archive or a part names it, made relative and `/`-separated, or a refusal when it could land anywhere
 * but under where it is unpacked: absolute, with a drive letter, a backslash, `..` or `.` segments, or control
 * characters. A leading `./` (what `tar -C dir .` writes) is dropped; `isDir` keeps a trailing `/` from counting.
 */
function safePath(raw: string, isDir = false): string {
  let p = raw.startsWith('./') ? raw.replace(/^(\.\/)+/, '') : raw;
  if (isDir) p = p.replace(/\/+$/, '');
  if (p === '' || p === '.') return '';
  if (p.includes('\\')) fail(`${shown(raw)}: paths use /, never a backslash`);
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) fail(`${shown(raw)}: paths must be relative`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(p)) fail(`${shown(raw)}: paths must not hold control characters`);
  if (Buffer.byteLength(p) > SKILL_LIMITS.maxPathBytes)
    fail(`${shown(raw)}: a path is at most ${SKILL_LIMITS.maxPathBytes} bytes`);
  for (const seg of p.split('/')) {
    if (seg === '') fail(`${shown(raw)}: a path must not hold an empty segment`);
    if (seg === '..' || seg === '.') fail(`${shown(raw)}: a path must not hold . or .. segments`);
    if (Buffer.byteLength(seg) > SKILL_LIMITS.maxSegmentBytes)
      fail(`${shown(raw)}: a path segment is at most ${SKILL_LIMITS.maxSegmentBytes} bytes`);
  }
  return p;
}

/** Folders some zip tools add beside the content, which are no part of any skill. */
const isJunk = (p: string) => p === '__MACOSX' || p.startsWith('__MACOSX/');

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** The entries of a zip archive, read from its central directory and inflated within the budget. */
function readZip(buf: Buffer, budget: Budget): RawEntry[] {
  const notZip = (why: string): never => fail(`the upload is not a valid zip archive: ${why}`);
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 0xffff); i--) {
    if (buf.readUInt32LE(i) === EOCD) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) notZip('no end of central directory');
  const count = buf.readUInt16LE(eocd + 10);
  const cdOffset = buf.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdOffset === 0xffffffff) notZip('zip64 archives are not supported');
  if (count > SKILL_LIMITS.maxFiles * 2 + 16) fail(`a skill holds at most ${SKILL_LIMITS.maxFiles} files`);
  const entries: RawEntry[] = [];
  let at = cdOffset;
  for (let n = 0; n < count; n++) {
    if (at + 46 > buf.length || buf.readUInt32LE(at) !== CENTRAL) notZip('a damaged central directory');
    const madeBy = buf.readUInt16LE(at + 4) >> 8;
    const flags = buf.readUInt16LE(at + 8);
    const method = buf.readUInt16LE(at + 10);
    const crc = buf.readUInt32LE(at + 16);
    const csize = buf.readUInt32LE(at + 20);
    const usize = buf.readUInt32LE(at + 24);
    const nameLen = buf.readUInt16LE(at + 28);
    const extraLen = buf.readUInt16LE(at + 30);
    const commentLen = buf.readUInt16LE(at + 32);
    const external = buf.readUInt32LE(at + 38);
    const local = buf.readUInt32LE(at + 42);
    if (at + 46 + nameLen > buf.length) notZip('a damaged central directory');
    const raw = buf.subarray(at + 46, at + 46 + nameLen).toString('utf8');
    at += 46 + nameLen + extraLen + commentLen;

    const mode = madeBy === 3 ? external >>> 16 : 0;
    const type = mode & S_IFMT;
    const isDir = raw.endsWith('/') || type === S_IFDIR;
    if (type === S_IFLNK) fail(`${shown(raw)}: links are not allowed in a skill`);
    if (type !== 0 && type !== S_IFREG && type !== S_IFDIR)
      fail(`${shown(raw)}: only regular files and directories are allowed in a skill`);
    const path = safePath(raw, isDir);
    if (isJunk(path) || isDir) continue;
    if (flags & 1) fail(`${shown(raw)}: encrypted entries are not supported`);
    if (method !== 0 && method !== 8) fail(`${shown(raw)}: compression method ${method} is not supported`);
    budget.file();
    if (usize > budget.left) budget.tooLarge();

    if (local + 30 > buf.length || buf.readUInt32LE(local) !== LOCAL) notZip(`${shown(raw)} has no local header`);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    if (start + csize > buf.length) notZip(`${shown(raw)} is cut short`);
    const data = buf.subarray(start, start + csize);
    let content: Buffer;
    if (method === 0) content = Buffer.from(data);
    else {
      try {
        // The cap holds while inflating: past it zlib stops with ERR_BUFFER_TOO_LARGE.
        content = inflateRawSync(data, { maxOutputLength: Math.max(1, budget.left) });
      } catch (e) {
        if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') budget.tooLarge();
        return notZip(`${shown(raw)} does not inflate`);
      }
    }
    budget.add(content.length);
    if (content.length !== usize || crc32(content) !== crc) notZip(`${shown(raw)} fails its size or CRC check`);
    entries.push({ path, content, ...(madeBy === 3 ? { executable: (mode & 0o111) !== 0 } : {}) });
  }
  return entries;
}

/** The entries of a tar archive (gzipped or not): regular files and directories only. */
async function readTar(buf: Buffer, budget: Budget): Promise<RawEntry[]> {
  const entries: RawEntry[] = [];
  const ex = extract();
  Readable.from([buf]).pipe(ex);
  try {
    for await (const entry of ex) {
      const h = entry.header;
      const type = h.type ?? 'file';
      if (type === 'directory') {
        safePath(h.name, true);
        entry.resume();
        continue;
      }
      if (type === 'symlink' || type === 'link') fail(`${shown(h.name)}: links are not allowed in a skill`);
      if (type !== 'file' && type !== 'contiguous-file')
        fail(`${shown(h.name)}: only regular files and directories are allowed in a skill (this is a ${type})`);
      const path = safePath(h.name);
      if (isJunk(path)) {
        entry.resume();
        continue;
      }
      budget.file();
      if ((h.size ?? 0) > budget.left) budget.tooLarge();
      const parts: Buffer[] = [];
      for await (const piece of entry as AsyncIterable<Buffer>) {
        budget.add(piece.length);
        parts.push(piece);
      }
      entries.push({ path, content: Buffer.concat(parts), executable: ((h.mode ?? 0) & 0o111) !== 0 });
    }
  } catch (e) {
    if (e instanceof SkillBundleError) throw e;
    fail(`the upload is not a valid tar archive: ${(e as Error).message.split('\n')[0]}`);
  } finally {
    ex.destroy();
  }
  return entries;
}

const ARCHIVE = /\.(zip|tar|tar\.gz|tgz)$/i;

/** The raw entries of the upload: one archive's, or the parts themselves. */
async function entriesOf(parts: UploadPart[], budget: Budget): Promise<{ entries: RawEntry[]; archive: boolean }> {
  if (parts.length === 0) fail('files: send at least one file');
  const [only] = parts;
  if (parts.length === 1 && ARCHIVE.test(only.filename)) {
    const buf = only.content;
    const isZip = buf.length >= 4 && (buf.readUInt32LE(0) === LOCAL || buf.readUInt32LE(0) === EOCD);
    const isGzip = buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
    if (/\.zip$/i.test(only.filename)) {
      if (!isZip) fail(`${shown(only.filename)} is not a zip archive`);
      return { entries: readZip(buf, budget), archive: true };
    }
    let tar = buf;
    if (isGzip) {
      try {
        // Headers and padding take up to 1.5 KiB per entry beside the files' bytes.
        tar = gunzipSync(buf, {
          maxOutputLength: SKILL_LIMITS.maxTotalBytes + (SKILL_LIMITS.maxFiles + 16) * 1536 + 10240,
        });
      } catch (e) {
        if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') budget.tooLarge();
        fail(`${shown(only.filename)} is not a valid gzip stream`);
      }
    } else if (/\.(tar\.gz|tgz)$/i.test(only.filename)) fail(`${shown(only.filename)} is not gzip-compressed`);
    if (tar.length < 512 || tar.length % 512 !== 0) fail(`${shown(only.filename)} is not a valid tar archive`);
    return { entries: await readTar(tar, budget), archive: true };
  }
  const entries: RawEntry[] = [];
  for (const p of parts) {
    if (!p.filename) fail('files: every file part needs a filename, its path in the skill such as my-skill/SKILL.md');
    budget.file();
    budget.add(p.content.length);
    entries.push({ path: safePath(p.filename), content: p.content });
  }
  return { entries, archive: false };
}

const NAME_RULE = /^[a-z0-9-]{1,64}$/;
const RESERVED = ['anthropic', 'claude'];
const XML_TAG = /<\/?[A-Za-z][^>]*>/;

/** Why `name` cannot be a skill's name, or undefined when it can. */
function nameProblem(name: string): string | undefined {
  if (!NAME_RULE.test(name)) return 'must be 1-64 lowercase letters, digits or hyphens';
  const word = RESERVED.find((w) => name.includes(w));
  if (word) return `must not contain the reserved word "${word}"`;
  return undefined;
}

/** SKILL.md's YAML frontmatter: `name` (optional, then the directory's) and `description` (required). */
function frontmatter(text: string): { name?: string; description: string } {
  const m = /^\uFEFF?---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(\r?\n|$)/.exec(text);
  if (!m) return fail('SKILL.md must open with YAML frontmatter between --- lines, holding name and description');
  let data: unknown;
  try {
    data = YAML.parse(m[1], { maxAliasCount: 10 });
  } catch (e) {
    return fail(`SKILL.md frontmatter is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (!data || typeof data !== 'object' || Array.isArray(data))
    return fail('SKILL.md frontmatter must be a YAML mapping holding name and description');
  const { name, description } = data as Record<string, unknown>;
  if (name !== undefined && name !== null && typeof name !== 'string')
    fail('SKILL.md frontmatter: name must be a string');
  if (typeof name === 'string') {
    const problem = nameProblem(name);
    if (problem) fail(`SKILL.md frontmatter: name ${shown(name)} ${problem}`);
  }
  if (typeof description !== 'string' || description.trim() === '')
    fail('SKILL.md frontmatter: description is required and must not be empty');
  const d = description as string;
  if (d.length > 1024) fail('SKILL.md frontmatter: description is at most 1024 characters');
  if (XML_TAG.test(d)) fail('SKILL.md frontmatter: description must not contain XML tags');
  return { ...(typeof name === 'string' ? { name } : {}), description: d };
}

/**
 * The checked bundle an upload makes. Files sent as parts must share one top-level directory holding SKILL.md; an
 * archive may hold such a directory, or SKILL.md at its root, whose frontmatter `name` then names the directory.
 */
export async function readBundle(parts: UploadPart[]): Promise<SkillBundle> {
  const budget = new Budget();
  const { entries, archive } = await entriesOf(parts, budget);
  const files = entries.filter((e) => e.path !== '');
  if (files.length === 0) fail('the upload holds no files');

  const seen = new Set<string>();
  for (const f of files) {
    if (seen.has(f.path)) fail(`${shown(f.path)} is in the upload twice`);
    seen.add(f.path);
  }
  for (const f of files) {
    const segs = f.path.split('/');
    for (let i = 1; i < segs.length; i++)
      if (seen.has(segs.slice(0, i).join('/')))
        fail(`${shown(segs.slice(0, i).join('/'))} is both a file and a directory in the upload`);
  }

  const tops = new Set(files.map((f) => f.path.split('/')[0]));
  let directory: string | undefined;
  let rel: (p: string) => string;
  if (archive && seen.has('SKILL.md')) {
    rel = (p) => p;
  } else {
    if (tops.size !== 1 || files.some((f) => !f.path.includes('/')))
      fail(
        archive
          ? 'the archive must hold SKILL.md at its root, or one top-level directory with SKILL.md in it'
          : 'all files must be in the same top-level directory, such as my-skill/SKILL.md and my-skill/scripts/run.py',
      );
    directory = [...tops][0];
    rel = (p) => p.slice(directory!.length + 1);
    if (!seen.has(`${directory}/SKILL.md`)) fail(`${shown(directory)} has no SKILL.md at its root`);
  }

  const bundleFiles: BundleFile[] = files.map((f) => ({
    path: rel(f.path),
    content: f.content,
    executable: f.executable ?? f.content.subarray(0, 2).toString('latin1') === '#!',
  }));
  const skillMd = bundleFiles.find((f) => f.path === 'SKILL.md')!;
  const text = skillMd.content.toString('utf8');
  if (Buffer.compare(Buffer.from(text, 'utf8'), skillMd.content) !== 0) fail('SKILL.md must be UTF-8 text');
  const fm = frontmatter(text);

  let name: string;
  if (directory === undefined) {
    if (!fm.name) return fail('SKILL.md at the archive root needs a frontmatter name, which names its directory');
    name = fm.name;
  } else {
    const problem = nameProblem(directory);
    if (fm.name !== undefined && fm.name !== directory)
      fail(`SKILL.md frontmatter name ${shown(fm.name)} must match its directory ${shown(directory)}`);
    if (problem) fail(`directory ${shown(directory)}: a skill's directory is its name, and ${problem}`);
    name = directory;
  }
  bundleFiles.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { name, description: fm.description, files: bundleFiles };
}

/** The version as a zip archive: every file under `<name>/`, with its mode (0755 when executable, else 0644). */
export function zipBundle(name: string, files: readonly BundleFile[]): Buffer {
  const tree: Zippable = {};
  for (const f of files) {
    tree[`${name}/${f.path}`] = [
      new Uint8Array(f.content.buffer, f.content.byteOffset, f.content.byteLength),
      { os: 3, attrs: ((f.executable ? 0o755 : 0o644) | S_IFREG) << 16, level: 6 },
    ];
  }
  const zip = zipSync(tree);
  return Buffer.from(zip.buffer, zip.byteOffset, zip.byteLength);
}
