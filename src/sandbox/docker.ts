// The dockerode SandboxProvider: hardened containers with a workspace volume that outlives the container.
import Docker from 'dockerode';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { loosenings } from '../session/agent';
import { EXEC_KILL, EXEC_WRAPPER } from './scripts';
import { ExecStalledError, execGuard } from './exec-guard';
import { LIVE_DELAY_MS, startLiveCopy, type LiveCopy } from './live-copy';
import type { EgressGate } from '../egress';
import { checkoutFromMirror, mirrorPath, removeMirror, syncMirror, upstreamOf } from './host-git';
import { resourceName } from './names';
import { putTree, removeAsRoot, scanTree } from './mount-tree';
import { hostLimits, RuntimeSelector, runtimeOf, type SandboxRuntimePreference } from './runtime';

export { resourceName };
import {
  SandboxLostError,
  type ExecRequest,
  type ExecResult,
  type ProvisionRequest,
  type ProvisionResult,
  type SandboxHealth,
  type SandboxInfo,
  type SandboxProvider,
  type SandboxRef,
} from './provider';
import { PlatformError } from '../session/platform-error';

export const LABEL = {
  managed: 'managed-agents',
  session: 'managed-agents.session',
  sandbox: 'managed-agents.sandbox',
  host: 'managed-agents.host',
  workspace: 'managed-agents.workspace',
} as const;

const SANDBOX_HOME = '/home/agent';
/** Files (such as git bundles) copied between host and sandbox are at most this large. */
const COPY_LIMIT_BYTES = 64 * 1024 * 1024;

export function dockerFromHost(host: string | undefined): Docker {
  if (!host) return new Docker();
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port) || 2375 });
}

export interface DockerProviderOptions {
  dockerHost?: string;
  defaultImage: string;
  /** Where host-side git mirrors of sandbox repos live. */
  mirrorsDir?: string;
  /** `auto` (the default): gVisor where the engine offers it, else runc, recorded as loosened. */
  runtime?: SandboxRuntimePreference;
  /** A runsc runtime name other than `runsc` / `runsc-nonet` (gVisor variants, for the benchmarks). */
  runscRuntimeName?: string;
  /** Checks a tenant's repository (`repo.tenant`) before host git clones it; without it, such a clone is refused. */
  egress?: EgressGate;
}

export class DockerSandboxProvider implements SandboxProvider {
  readonly docker: Docker;
  private readonly runtimes: RuntimeSelector;

  constructor(private readonly opts: DockerProviderOptions) {
    this.docker = dockerFromHost(opts.dockerHost);
    this.runtimes = new RuntimeSelector(this.docker, opts.runtime, opts.runscRuntimeName);
  }

  /** The result for a container found again: its runtime is the one it was created with. */
  private async found(
    sandboxId: string,
    recipe: ProvisionRequest['recipe'],
    resumed: boolean,
    runtimeName?: string,
  ): Promise<ProvisionResult> {
    const name = runtimeName ?? (await this.docker.getContainer(sandboxId).inspect()).HostConfig.Runtime;
    const runtime = runtimeOf(name);
    return {
      sandboxId,
      resumed,
      workspaceReused: true,
      runtime: runtime.kind,
      loosened: [...loosenings(recipe), ...runtime.loosened],
    };
  }

  private async findContainers(filters: Record<string, string[]>): Promise<Docker.ContainerInfo[]> {
    return this.docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  }

  private async ensureVolume(name: string, labels: Record<string, string>): Promise<boolean> {
    try {
      await this.docker.getVolume(name).inspect();
      return true;
    } catch {
      await this.docker.createVolume({ Name: name, Labels: labels });
      return false;
    }
  }

  async provision(req: ProvisionRequest): Promise<ProvisionResult> {
    const { recipe } = req;
    const labels = {
      [LABEL.managed]: '1',
      [LABEL.session]: req.sessionId,
      [LABEL.sandbox]: req.name,
      [LABEL.host]: req.hostId,
    };
    // A sandbox handed from another session carries that session's labels: the one named is found by its id.
    if (req.resume) {
      const info = await this.docker
        .getContainer(req.resume)
        .inspect()
        .catch(() => undefined);
      if (info && info.Config.Labels?.[LABEL.host] === req.hostId) {
        if (!info.State.Running) await this.docker.getContainer(req.resume).start();
        return this.found(req.resume, recipe, true, info.HostConfig.Runtime);
      }
    }
    const existing = await this.findContainers({
      label: [`${LABEL.session}=${req.sessionId}`, `${LABEL.sandbox}=${req.name}`],
    });
    for (const c of existing) {
      const container = this.docker.getContainer(c.Id);
      // The workflow names the sandbox it stopped for idleness: that one is started again, with its files.
      if (req.resume === c.Id && c.State !== 'running') {
        await container.start();
        return this.found(c.Id, recipe, true);
      }
      if (c.State === 'running' && c.Labels[LABEL.host] === req.hostId) {
        return this.found(c.Id, recipe, req.resume === c.Id);
      }
      // Anything else left over (killed, crashed) is replaced; the workspace volume stays, its /mnt goes.
      await container.remove({ force: true, v: true }).catch(() => undefined);
    }
    const workspace = resourceName('ws', req.sessionId, req.name);
    const home = resourceName('home', req.sessionId, req.name);
    const workspaceReused = await this.ensureVolume(workspace, labels);
    await this.ensureVolume(home, labels);
    const image = recipe.image ?? this.opts.defaultImage;
    const runtime = await this.runtimes.choose(recipe);
    const limits = hostLimits(recipe, runtime.kind);
    const container = await this.docker.createContainer({
      name: `${resourceName('sb', req.sessionId, req.name)}-${Date.now().toString(36)}`,
      Image: image,
      Cmd: ['sleep', 'infinity'],
      User: '1000:1000',
      WorkingDir: recipe.workdir,
      Env: [`HOME=${SANDBOX_HOME}`, ...Object.entries(recipe.env).map(([k, v]) => `${k}=${v}`)],
      Labels: { ...labels, [LABEL.workspace]: workspace },
      NetworkDisabled: recipe.network === 'none',
      HostConfig: {
        Runtime: runtime.name,
        // A reaping init (the engine's docker-init) as pid 1: whatever a command leaves running is reaped when it
        // ends, where `sleep infinity` as pid 1 would keep it a zombie holding one of the PidsLimit slots.
        Init: true,
        NetworkMode: recipe.network,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: recipe.readOnlyRootfs,
        Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=268435456' },
        Mounts: [
          { Type: 'volume', Source: workspace, Target: recipe.workdir },
          { Type: 'volume', Source: home, Target: SANDBOX_HOME },
          // The session's mounts: a volume of the container's own (the archive call cannot write a tmpfs).
          { Type: 'volume', Source: '', Target: '/mnt' },
        ],
        PidsLimit: limits.pids,
        Memory: limits.memoryBytes,
        MemorySwap: limits.memoryBytes,
        NanoCpus: Math.round(recipe.resources.cpus * 1e9),
        Privileged: false,
      },
    });
    await container.start();
    if (!workspaceReused) {
      try {
        await this.populate(container.id, req);
      } catch (err) {
        await this.destroy(container.id);
        throw err;
      }
    }
    return {
      sandboxId: container.id,
      resumed: false,
      workspaceReused,
      runtime: runtime.kind,
      loosened: [...loosenings(recipe), ...runtime.loosened],
    };
  }

  /** Fills a fresh workspace: the repo cloned on the host (outside the sandbox), then the setup commands inside. */
  private async populate(sandboxId: string, req: ProvisionRequest): Promise<void> {
    const { recipe } = req;
    if (recipe.repo) await this.cloneInto(sandboxId, req);
    for (const [i, command] of recipe.setup.entries()) {
      const r = await this.execute(sandboxId, {
        key: `setup-${i}`,
        script: command,
        timeoutSeconds: recipe.commandTimeoutSeconds,
        maxOutputBytes: 8192,
      });
      if (r.exitCode !== 0)
        throw new SetupFailedError(
          `setup command ${i + 1} (${command}) exited with ${r.exitCode}: ${r.output.slice(-2000)}`,
        );
    }
  }

  private async cloneInto(sandboxId: string, req: ProvisionRequest): Promise<void> {
    const repo = req.recipe.repo!;
    const mirror = mirrorPath(this.opts.mirrorsDir, req.sessionId, req.name);
    await syncMirror(mirror, await upstreamOf(repo, this.opts.egress), req.repoToken);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ma-clone-'));
    try {
      // The tree goes to workdir/<path>: the archive carries the path's directories, so nothing is made in the sandbox.
      const tree = path.join(dir, 'tree', ...(repo.path ? repo.path.split('/') : []));
      await checkoutFromMirror(mirror, repo.url, repo.ref, tree, repo.commit);
      const tar = spawn(
        'tar',
        ['-c', '-C', path.join(dir, 'tree'), '--owner=1000', '--group=1000', '--numeric-owner', '.'],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      await this.docker.getContainer(sandboxId).putArchive(tar.stdout, { path: req.recipe.workdir });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  // Both go through exec, not Docker's archive API: that API does not see tmpfs mounts such as /tmp.
  async copyOut(sandboxId: string, file: string): Promise<Buffer> {
    const r = await this.execute(sandboxId, {
      key: `copy-out-${randomUUID()}`,
      script:
        '[ -f "$MA_FILE" ] || { echo "not a regular file: $MA_FILE"; exit 2; }; s=$(stat -c %s -- "$MA_FILE"); [ "$s" -le "$MA_LIMIT" ] || { echo "$MA_FILE is $s bytes; the limit is $MA_LIMIT"; exit 3; }; base64 -w0 -- "$MA_FILE"',
      env: { MA_FILE: file, MA_LIMIT: String(COPY_LIMIT_BYTES) },
      timeoutSeconds: 120,
      maxOutputBytes: Math.ceil((COPY_LIMIT_BYTES * 4) / 3) + 1024,
    });
    if (r.exitCode !== 0) throw new Error(`cannot read ${file} from the sandbox: ${r.output.trim()}`);
    return Buffer.from(r.output.trim(), 'base64');
  }

  async copyIn(sandboxId: string, dir: string, name: string, content: Buffer): Promise<void> {
    if (content.length > COPY_LIMIT_BYTES)
      throw new Error(`${name} is ${content.length} bytes; the limit is ${COPY_LIMIT_BYTES}`);
    const r = await this.execute(sandboxId, {
      key: `copy-in-${randomUUID()}`,
      script: 'mkdir -p -- "$MA_DIR" && cat > "$MA_DIR/$MA_NAME"',
      env: { MA_DIR: dir, MA_NAME: name },
      stdin: content,
      timeoutSeconds: 120,
      maxOutputBytes: 4096,
    });
    if (r.exitCode !== 0) throw new Error(`cannot write ${dir}/${name} in the sandbox: ${r.output.trim()}`);
  }

  // The session's mounts (mount-tree.ts): trees through the archive call, removals as root, the change scan.
  readonly putTree: SandboxProvider['putTree'] = (id, dir, entries) => putTree(this.docker, id, dir, entries);
  readonly removePaths: SandboxProvider['removePaths'] = (id, paths) => removeAsRoot(this.docker, id, paths);
  // The home directory kept across a pause (src/hands/sandbox-home.ts): read and written by the engine, outside the
  // sandbox. The archive goes into the home volume itself, as the read-only root refuses one put into /home.
  readonly homeArchive: SandboxProvider['homeArchive'] = (id) =>
    this.docker.getContainer(id).getArchive({ path: SANDBOX_HOME });
  readonly putHome: SandboxProvider['putHome'] = async (id, archive, signal) => {
    await this.docker
      .getContainer(id)
      .putArchive(archive, { path: SANDBOX_HOME, ...(signal ? { abortSignal: signal } : {}) });
  };
  /** The scan is a direct exec (no run-once wrapper: it only reads, and is run again after any failure). */
  readonly scanFiles: SandboxProvider['scanFiles'] = async (id, dirs, known) => {
    const watchdog = this.watchContainer(id);
    try {
      return await Promise.race([scanTree(this.docker, id, dirs, known), watchdog.gone]);
    } catch (err) {
      if (err instanceof SandboxLostError) throw err;
      if ((await this.health(id)) !== 'running')
        throw new SandboxLostError(`sandbox ${id.slice(0, 12)} is gone: ${(err as Error).message}`);
      throw err;
    } finally {
      watchdog.stop();
    }
  };

  async execute(sandboxId: string, req: ExecRequest, signal?: AbortSignal): Promise<ExecResult> {
    // No inspect first: an exec into a container that is stopped or gone fails, and the catch below says which.
    const container = this.docker.getContainer(sandboxId);
    // The wrapper hands the command the variables MA_ENV names; its own variables are lower case.
    const names = Object.keys(req.env ?? {});
    const bad = names.find((n) => !/^[A-Z_][A-Z0-9_]*$/.test(n));
    if (bad !== undefined) throw new Error(`a sandbox command's variable must be named in upper case: ${bad}`);
    // Stdin the engine can carry as a variable (text without NUL bytes, small) lets a warm unit run the command;
    // any other comes on the exec's stream.
    const text = req.stdin && textOf(req.stdin);
    const streamed = !!req.stdin && text === undefined;
    const env = [
      `MA_KEY=${req.key.replace(/[^a-zA-Z0-9_.-]/g, '_')}`,
      `MA_SCRIPT=${req.script}`,
      `MA_TIMEOUT_US=${Math.max(1, Math.round(req.timeoutSeconds * 1e6))}`,
      `MA_MAX=${req.maxOutputBytes}`,
      `MA_HAS_STDIN=${streamed ? 1 : 0}`,
      ...(text !== undefined ? [`MA_STDIN=${text}`] : []),
      `MA_ENV=${names.join(' ')}`,
      ...Object.entries(req.env ?? {}).map(([k, v]) => `${k}=${v}`),
    ];
    let raw: Buffer;
    // An exec into a gVisor sandbox that dies while the exec starts may never end: watch the container too.
    const watchdog = this.watchContainer(sandboxId);
    // The live preview is a second exec, started only for a command still running LIVE_DELAY_MS after its exec
    // started: most commands end sooner, and starting the copy's processes in the sandbox costs as much as a
    // short command.
    let live: LiveCopy | undefined;
    let liveTimer: NodeJS.Timeout | undefined;
    // A cancel kills the command's group; the guard bounds every wait on the engine below.
    const guard = execGuard(req.timeoutSeconds, signal, () => void this.kill(container, env[0]));
    let stream: NodeJS.ReadWriteStream | undefined;
    try {
      const exec = await Promise.race([
        container.exec({
          Cmd: ['bash', '-c', EXEC_WRAPPER],
          Env: env,
          AttachStdout: true,
          AttachStderr: true,
          AttachStdin: streamed,
        }),
        guard.failed,
      ]);
      const s = await Promise.race([exec.start({ hijack: true, stdin: streamed }), watchdog.gone, guard.failed]);
      stream = s;
      guard.watch(exec);
      if (req.onOutput && (req.liveBytes ?? 0) > 0)
        liveTimer = setTimeout(
          () => (live = startLiveCopy(this.docker, container, env[0], req.liveBytes!, req.onOutput!)),
          LIVE_DELAY_MS,
        );
      const chunks: Buffer[] = [];
      const sink = new PassThrough();
      // The wrapper caps output inside the sandbox, but the sandbox is hostile: never buffer more than that.
      const limit = req.maxOutputBytes + 64 * 1024;
      let received = 0;
      sink.on('data', (c: Buffer) => {
        received += c.length;
        if (received > limit) {
          (s as unknown as { destroy(e?: Error): void }).destroy(
            new Error(`the sandbox sent more than ${limit} bytes of output`),
          );
          return;
        }
        chunks.push(c);
      });
      // stdout carries the capped result; the wrapper writes nothing else.
      this.docker.modem.demuxStream(s, sink, new PassThrough().resume());
      if (streamed) s.end(req.stdin);
      await Promise.race([
        new Promise<void>((resolve, reject) => {
          s.on('end', resolve);
          s.on('close', resolve);
          s.on('error', reject);
        }),
        watchdog.gone,
        guard.failed,
      ]);
      raw = Buffer.concat(chunks);
    } catch (err) {
      (stream as unknown as { destroy?(e?: Error): void } | undefined)?.destroy?.();
      if (err instanceof SandboxLostError || err instanceof ExecStalledError || signal?.aborted) throw err;
      const lost = await this.lostReason(sandboxId);
      if (lost) throw new SandboxLostError(`${lost}: ${(err as Error).message}`);
      throw err;
    } finally {
      guard.stop();
      watchdog.stop();
      clearTimeout(liveTimer);
      await live?.finish();
    }
    const parsed = parseWrapperOutput(raw, env[0].slice('MA_KEY='.length));
    if (!parsed) {
      if ((await this.health(sandboxId)) !== 'running')
        throw new SandboxLostError(`sandbox ${sandboxId.slice(0, 12)} stopped while the command ran`);
      throw new Error(`the sandbox returned no result trailer (${raw.length} bytes)`);
    }
    return parsed;
  }

  /** Rejects `gone` once the container is seen not running (checked every 2 s) until `stop` is called. */
  private watchContainer(sandboxId: string): { gone: Promise<never>; stop(): void } {
    let timer: NodeJS.Timeout | undefined;
    const gone = new Promise<never>((_, reject) => {
      timer = setInterval(() => {
        void this.health(sandboxId).then((h) => {
          if (h !== 'running')
            reject(new SandboxLostError(`sandbox ${sandboxId.slice(0, 12)} stopped while the command ran`));
        });
      }, 2000);
    });
    gone.catch(() => undefined);
    return { gone, stop: () => clearInterval(timer) };
  }

  private async kill(container: Docker.Container, keyEnv: string): Promise<void> {
    try {
      const exec = await container.exec({ Cmd: ['bash', '-c', EXEC_KILL], Env: [keyEnv] });
      await exec.start({ Detach: true });
    } catch {
      // the sandbox may be gone already
    }
  }

  /** Why a sandbox cannot run commands (it no longer exists, or is not running), or undefined while it runs. */
  private async lostReason(sandboxId: string): Promise<string | undefined> {
    let info;
    try {
      info = await this.docker.getContainer(sandboxId).inspect();
    } catch {
      return `sandbox ${sandboxId.slice(0, 12)} no longer exists`;
    }
    if (info.State.Running) return undefined;
    return `sandbox ${sandboxId.slice(0, 12)} is not running (${info.State.Status}, exit ${info.State.ExitCode})`;
  }

  async stop(sandboxId: string): Promise<void> {
    await this.docker
      .getContainer(sandboxId)
      .stop({ t: 1 })
      .catch((err: { statusCode?: number }) => {
        if (err.statusCode !== 304) throw err;
      });
  }

  async destroy(sandboxId: string, opts: { keepWorkspace?: boolean } = {}): Promise<void> {
    const container = this.docker.getContainer(sandboxId);
    let labels: Record<string, string> = {};
    try {
      labels = (await container.inspect()).Config.Labels ?? {};
    } catch {
      return;
    }
    await container.remove({ force: true, v: true }).catch(() => undefined);
    if (!opts.keepWorkspace && labels[LABEL.session] && labels[LABEL.sandbox]) {
      for (const kind of ['ws', 'home'])
        await this.docker
          .getVolume(resourceName(kind, labels[LABEL.session], labels[LABEL.sandbox]))
          .remove()
          .catch(() => undefined);
      // The host-side git mirror goes with the workspace it served.
      removeMirror(this.opts.mirrorsDir, labels[LABEL.session], labels[LABEL.sandbox]);
    }
  }

  async origin(sandboxId: string): Promise<SandboxRef | undefined> {
    const labels =
      (
        await this.docker
          .getContainer(sandboxId)
          .inspect()
          .catch(() => undefined)
      )?.Config.Labels ?? {};
    return labels[LABEL.session] && labels[LABEL.sandbox]
      ? { sessionId: labels[LABEL.session], name: labels[LABEL.sandbox] }
      : undefined;
  }

  async health(sandboxId: string): Promise<SandboxHealth> {
    try {
      const info = await this.docker.getContainer(sandboxId).inspect();
      return info.State.Running ? 'running' : 'stopped';
    } catch {
      return 'missing';
    }
  }

  async list(hostId: string): Promise<SandboxInfo[]> {
    const found = await this.findContainers({ label: [`${LABEL.host}=${hostId}`] });
    return found.map((c) => ({
      sessionId: c.Labels[LABEL.session],
      name: c.Labels[LABEL.sandbox],
      sandboxId: c.Id,
      hostId,
      state: c.State === 'running' ? 'running' : 'stopped',
      createdMs: c.Created * 1000,
    }));
  }
}

export class SetupFailedError extends PlatformError {}

/** Stdin the exec wrapper takes as $MA_STDIN: UTF-8 text without NUL bytes, at most 64 KiB; else undefined. */
const STDIN_TEXT_MAX_BYTES = 64 * 1024;
function textOf(stdin: Buffer): string | undefined {
  if (stdin.length > STDIN_TEXT_MAX_BYTES || stdin.includes(0)) return undefined;
  const text = stdin.toString('utf8');
  return Buffer.from(text, 'utf8').equals(stdin) ? text : undefined;
}

const META = Buffer.from('\n\0MA-META ');
const CUT = Buffer.from('\n\0MA-CUT\0\n');

/** Where EXEC_WRAPPER keeps the whole of an output it had to cut. */
export function fullOutputPath(key: string): string {
  return `${SANDBOX_HOME}/.tool-output/${key}.txt`;
}

export function parseWrapperOutput(raw: Buffer, key = ''): ExecResult | undefined {
  const at = raw.lastIndexOf(META);
  if (at < 0) return undefined;
  const [code, size, replayed, kept] = raw
    .subarray(at + META.length)
    .toString('utf8')
    .replace(/\0$/, '')
    .split(' ')
    .map(Number);
  let body = raw.subarray(0, at);
  let output: string;
  const cut = body.indexOf(CUT);
  if (size > body.length && cut >= 0) {
    const head = body.subarray(0, cut);
    const tail = body.subarray(cut + CUT.length);
    body = Buffer.concat([head, tail]);
    const where = kept === 1 ? `; the whole output is in ${fullOutputPath(key)}` : '';
    output = `${head.toString('utf8')}\n[output truncated: ${size - head.length - tail.length} of ${size} bytes omitted${where}]\n${tail.toString('utf8')}`;
  } else output = body.toString('utf8');
  const full = kept === 1 && size > body.length ? { fullOutputPath: fullOutputPath(key) } : {};
  return { output, exitCode: code, timedOut: code === 124, outputBytes: size, replayed: replayed === 1, ...full };
}
