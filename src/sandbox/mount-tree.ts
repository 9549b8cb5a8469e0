// Mounts in a sandbox: a tree of files written through the engine's archive call (a tar built in memory, each entry
// with its owner and mode, so read-only mounts are root's and refuse the sandbox user), and the scan that finds
// what the sandbox changed under given directories, reading only regular files and never following a link.
import type Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import tar from 'tar-stream';
import type { ScanResult, TreeEntry } from './provider';

/** The sandbox user, who owns read-write mounts. */
export const SANDBOX_UID = 1000;

/** A scan reads at most this much content in one exec; files past it wait for the next scan. */
export const SCAN_READ_BYTES = 64 * 1024 * 1024;
/** A file larger than this is listed, never read. */
export const SCAN_FILE_BYTES = 32 * 1024 * 1024;
/** The scan ends itself (SIGALRM) after this long; the host stops waiting a little later. */
export const SCAN_TIMEOUT_SECONDS = 120;

/** The tar of `entries`, parents before children; paths are relative to the directory the archive is put in. */
export async function packTree(entries: readonly TreeEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    pack.on('data', (c: unknown) => void chunks.push(c as Buffer));
    pack.on('end', () => resolve(Buffer.concat(chunks)));
    pack.on('error', reject);
  });
  const sorted = [...entries].sort((a, b) => depth(a.path) - depth(b.path) || a.path.localeCompare(b.path));
  const mtime = new Date();
  for (const e of sorted) {
    const name = e.path.replace(/^\/+/, '');
    if (!name || name.split('/').some((p) => p === '..' || p === '.' || p === ''))
      throw new Error(`not a plain relative path: ${e.path}`);
    const header = { name, mode: e.mode, uid: e.uid, gid: e.uid, mtime };
    if (e.type === 'dir') pack.entry({ ...header, type: 'directory' });
    else if (e.type === 'link') pack.entry({ ...header, type: 'symlink', linkname: e.target });
    else pack.entry({ ...header, type: 'file', size: e.content.length }, e.content);
  }
  pack.finalize();
  return done;
}

const depth = (p: string) => p.split('/').filter(Boolean).length;

/** Writes `entries` under `dir` (which must exist in the sandbox) in one archive call. */
export async function putTree(
  docker: Docker,
  sandboxId: string,
  dir: string,
  entries: readonly TreeEntry[],
): Promise<void> {
  if (entries.length === 0) return;
  const archive = await packTree(entries);
  const body = new PassThrough();
  body.end(archive);
  await docker.getContainer(sandboxId).putArchive(body, { path: dir });
}

/**
 * Removes paths as root: read-only mounts are root's, in root's directories. Owner rights suffice (the sandbox has
 * no capabilities): each directory is made writable by its owner first.
 */
export async function removeAsRoot(docker: Docker, sandboxId: string, paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return;
  const exec = await docker.getContainer(sandboxId).exec({
    Cmd: ['sh', '-c', 'for p in "$@"; do chmod -R u+w -- "$p" 2>/dev/null; rm -rf -- "$p"; done', 'rm', ...paths],
    User: '0:0',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: false });
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
    stream.resume();
  });
}

/**
 * The scan, run by python3 in the sandbox as its user. Input (stdin, JSON): `dirs` and `known` (path -> [size,
 * mtime_ns]). Walks each directory without following links (lstat only); a regular file whose size or mtime differs
 * from `known` is read through an O_NOFOLLOW descriptor, checked again as a regular file on that descriptor. It
 * ends itself after `timeout` seconds (the alarm's default action ends the process).
 */
export const SCAN_PY = String.raw`
import base64, json, os, signal, stat, sys
req = json.load(sys.stdin)
signal.alarm(req["timeout"])
known = req["known"]; budget = req["budget"]; per_file = req["perFile"]
files = []; other = []
def kind(m):
    if stat.S_ISLNK(m): return "link"
    if stat.S_ISDIR(m): return "directory"
    if stat.S_ISFIFO(m): return "fifo"
    if stat.S_ISSOCK(m): return "socket"
    if stat.S_ISCHR(m) or stat.S_ISBLK(m): return "device"
    return "other"
def visit(path):
    global budget
    try: st = os.lstat(path)
    except OSError: return
    if stat.S_ISDIR(st.st_mode):
        try: names = sorted(os.listdir(path))
        except OSError as e:
            other.append({"path": path, "kind": "unreadable directory"}); return
        for n in names: visit(os.path.join(path, n))
        return
    if stat.S_ISLNK(st.st_mode):
        try: other.append({"path": path, "kind": "link", "target": os.readlink(path)})
        except OSError: other.append({"path": path, "kind": "link"})
        return
    if not stat.S_ISREG(st.st_mode):
        other.append({"path": path, "kind": kind(st.st_mode)}); return
    f = {"path": path, "size": st.st_size, "mtime": str(st.st_mtime_ns), "mode": stat.S_IMODE(st.st_mode)}
    k = known.get(path)
    if k is not None and k[0] == st.st_size and k[1] == f["mtime"]:
        files.append(f); return
    if st.st_size > per_file:
        f["error"] = "larger than %d bytes" % per_file; files.append(f); return
    if st.st_size > budget:
        f["deferred"] = True; files.append(f); return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        f["error"] = e.strerror or "cannot open"; files.append(f); return
    try:
        fs = os.fstat(fd)
        if not stat.S_ISREG(fs.st_mode):
            other.append({"path": path, "kind": kind(fs.st_mode)}); return
        chunks = []; left = per_file + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 20))
            if not b: break
            chunks.append(b); left -= len(b)
        data = b"".join(chunks)
        if len(data) > per_file:
            f["error"] = "larger than %d bytes" % per_file; files.append(f); return
        f["size"] = len(data); f["mtime"] = str(fs.st_mtime_ns)
        f["content"] = base64.b64encode(data).decode()
        budget -= len(data)
        files.append(f)
    finally:
        os.close(fd)
for d in req["dirs"]:
    try: st = os.lstat(d)
    except OSError: continue
    if not stat.S_ISDIR(st.st_mode):
        other.append({"path": d, "kind": kind(st.st_mode)}); continue
    visit(d)
sys.stdout.write(json.dumps({"files": files, "other": other}))
`;

interface ScanReply {
  files: {
    path: string;
    size: number;
    mtime: string;
    mode?: number;
    content?: string;
    error?: string;
    deferred?: boolean;
  }[];
  other: { path: string; kind: string; target?: string }[];
}

/** Output of one direct exec: stdout whole (up to its cap), the tail of stderr, and the exit code. */
interface DirectExec {
  exitCode: number | null;
  stdout: Buffer;
  stderr: string;
}

/**
 * Runs `cmd` in the sandbox as `user` with `stdin`, without the run-once wrapper of `execute` (a read-only program
 * that is safe to run again needs neither its record under /tmp nor its processes). More than `maxStdout` bytes of
 * stdout, or no end within `timeoutMs`, ends the exec with an error.
 */
async function execDirect(
  docker: Docker,
  sandboxId: string,
  req: { cmd: string[]; user: string; stdin: Buffer; maxStdout: number; timeoutMs: number },
): Promise<DirectExec> {
  const container = docker.getContainer(sandboxId);
  const exec = await container.exec({
    Cmd: req.cmd,
    User: req.user,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({ hijack: true, stdin: true });
  const destroy = (err: Error) => (stream as unknown as { destroy(e?: Error): void }).destroy(err);
  const out: Buffer[] = [];
  let outBytes = 0;
  let errTail = '';
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stdout.on('data', (c: Buffer) => {
    outBytes += c.length;
    if (outBytes > req.maxStdout) return destroy(new Error(`the sandbox sent more than ${req.maxStdout} bytes`));
    out.push(c);
  });
  stderr.on('data', (c: Buffer) => void (errTail = (errTail + c.toString('utf8')).slice(-2000)));
  docker.modem.demuxStream(stream, stdout, stderr);
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => destroy(new Error(`no answer in ${req.timeoutMs} ms`)), req.timeoutMs);
      stream.on('end', resolve);
      stream.on('close', resolve);
      stream.on('error', reject);
      stream.end(req.stdin);
    });
  } finally {
    clearTimeout(timer);
  }
  const info = await exec.inspect();
  return { exitCode: info.ExitCode, stdout: Buffer.concat(out), stderr: errTail };
}

/** Runs the scan in one exec of python3 as the sandbox user. */
export async function scanTree(
  docker: Docker,
  sandboxId: string,
  dirs: readonly string[],
  known: Readonly<Record<string, { size: number; mtime: string }>>,
): Promise<ScanResult> {
  const r = await execDirect(docker, sandboxId, {
    // -I -S: no environment variables, user site or site module: less to start, nothing of the sandbox's imported.
    cmd: ['python3', '-I', '-S', '-c', SCAN_PY],
    user: `${SANDBOX_UID}:${SANDBOX_UID}`,
    stdin: Buffer.from(
      JSON.stringify({
        dirs,
        known: Object.fromEntries(Object.entries(known).map(([p, k]) => [p, [k.size, k.mtime]])),
        budget: SCAN_READ_BYTES,
        perFile: SCAN_FILE_BYTES,
        timeout: SCAN_TIMEOUT_SECONDS,
      }),
    ),
    maxStdout: Math.ceil((SCAN_READ_BYTES * 4) / 3) + 4 * 1024 * 1024,
    timeoutMs: (SCAN_TIMEOUT_SECONDS + 15) * 1000,
  });
  if (r.exitCode !== 0)
    throw new Error(
      `the scan of ${dirs.join(', ')} failed (exit ${r.exitCode}): ${(r.stderr || r.stdout.toString('utf8')).slice(-500)}`,
    );
  const reply = JSON.parse(r.stdout.toString('utf8')) as ScanReply;
  return {
    files: reply.files.map((f) => ({
      path: f.path,
      size: f.size,
      mtime: f.mtime,
      ...(f.mode !== undefined ? { mode: f.mode } : {}),
      ...(f.content !== undefined ? { content: Buffer.from(f.content, 'base64') } : {}),
      ...(f.error ? { error: f.error } : {}),
      ...(f.deferred ? { deferred: true } : {}),
    })),
    other: reply.other,
  };
}
