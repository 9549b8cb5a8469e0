// SandboxProvider: the minimal contract the hands need from a place that runs commands.
import type { SandboxRecipe } from '../session/agent';
import { PlatformError } from '../session/platform-error';

export interface SandboxRef {
  sessionId: string;
  name: string;
}

export interface ProvisionRequest extends SandboxRef {
  recipe: SandboxRecipe;
  /** The hands host that will own the sandbox; recorded as a label. */
  hostId: string;
  /** A sandbox this session stopped for idleness, to start again instead of creating one. */
  resume?: string;
  /** The repo credential, resolved from the vault by the hands host; held in memory only. */
  repoToken?: string;
}

export interface ProvisionResult {
  sandboxId: string;
  /** A stopped sandbox was started again rather than created. */
  resumed: boolean;
  /** The workspace volume already existed, so its files carried over. */
  workspaceReused: boolean;
  /** What runs the sandbox: `runsc` (gVisor) or `runc` (the host's kernel, also listed in `loosened`). */
  runtime?: string;
  loosened: string[];
}

export interface ExecRequest {
  /** Idempotency key: a second request with the same key returns the first one's result without running. */
  key: string;
  /** Shell source run by bash in the workdir. */
  script: string;
  env?: Record<string, string>;
  /** Bytes written to the command's stdin. */
  stdin?: Buffer;
  timeoutSeconds: number;
  /** Output beyond this many bytes is cut inside the sandbox, keeping head and tail. */
  maxOutputBytes: number;
  /** Receives the output live as the command writes it, up to `liveBytes` (a preview; the result is authoritative). */
  onOutput?: (chunk: Buffer) => void;
  liveBytes?: number;
}

export interface ExecResult {
  output: string;
  exitCode: number;
  timedOut: boolean;
  /** Total bytes the command wrote, before capping. */
  outputBytes: number;
  /** The result was recorded by an earlier attempt; the command did not run again. */
  replayed: boolean;
  /** Where in the sandbox the whole output is kept, when `output` is only its head and tail. */
  fullOutputPath?: string;
}

/** One entry of a tree written into a sandbox: its path relative to the target directory, owner and mode. */
export type TreeEntry =
  | { type: 'dir'; path: string; uid: number; mode: number }
  | { type: 'file'; path: string; uid: number; mode: number; content: Buffer }
  | { type: 'link'; path: string; uid: number; mode: number; target: string };

/** What a scan found: regular files (with content where read) and anything else, by kind; links are never followed. */
export interface ScanResult {
  files: {
    path: string;
    size: number;
    /** Modification time in nanoseconds, as a decimal string. */
    mtime: string;
    /** Permission bits (st_mode & 0o7777). */
    mode?: number;
    /** Present when the file was read: it was not in `known`, or its size or mtime differed. */
    content?: Buffer;
    /** Why it could not be read (too large, unreadable). */
    error?: string;
    /** Not read this time: the scan's read budget was spent. */
    deferred?: boolean;
  }[];
  /** `target`: a link's target, as readlink gives it. */
  other: { path: string; kind: string; target?: string }[];
}

export type SandboxHealth = 'running' | 'stopped' | 'missing';

export interface SandboxInfo extends SandboxRef {
  sandboxId: string;
  hostId: string;
  state: SandboxHealth;
  createdMs: number;
}

/**
 * The minimal contract. `provision` creates (or, given a stopped sandbox of the same session and name, starts)
 * a sandbox; `execute` runs one command; `stop` keeps the workspace; `destroy` removes sandbox and workspace.
 * A sandbox that is gone makes `execute` throw `SandboxLostError`.
 */
export interface SandboxProvider {
  provision(req: ProvisionRequest): Promise<ProvisionResult>;
  execute(sandboxId: string, req: ExecRequest, signal?: AbortSignal): Promise<ExecResult>;
  stop(sandboxId: string): Promise<void>;
  destroy(sandboxId: string, opts?: { keepWorkspace?: boolean }): Promise<void>;
  health(sandboxId: string): Promise<SandboxHealth>;
  list(hostId: string): Promise<SandboxInfo[]>;
  /** The session and name a sandbox was made for (fixed for its life, whoever it is handed to), if it exists. */
  origin(sandboxId: string): Promise<SandboxRef | undefined>;
  /** Reads one file out of the sandbox (no host path is touched). */
  copyOut(sandboxId: string, file: string): Promise<Buffer>;
  /** Writes one file into a directory of the sandbox, owned by the sandbox user. */
  copyIn(sandboxId: string, dir: string, name: string, content: Buffer): Promise<void>;
  /** Writes a tree under `dir` (an existing directory) through the engine's archive call, with each entry's owner and mode. */
  putTree(sandboxId: string, dir: string, entries: readonly TreeEntry[]): Promise<void>;
  /** Removes paths as root (read-only mounts are root's). */
  removePaths(sandboxId: string, paths: readonly string[]): Promise<void>;
  /** The home directory as a tar stream (the engine's archive call), its entries under the directory's own name. */
  homeArchive(sandboxId: string): Promise<NodeJS.ReadableStream>;
  /** Extracts a tar stream into the home directory; its entries' paths are relative to the home directory. */
  putHome(sandboxId: string, archive: NodeJS.ReadableStream, signal?: AbortSignal): Promise<void>;
  /**
   * Lists the regular files under `dirs` with size and mtime, and reads those whose size or mtime differ from
   * `known`; links and other types are reported apart, never followed. One exec.
   */
  scanFiles(
    sandboxId: string,
    dirs: readonly string[],
    known: Readonly<Record<string, { size: number; mtime: string }>>,
  ): Promise<ScanResult>;
}

export class SandboxLostError extends PlatformError {}
