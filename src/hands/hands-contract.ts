// The hands contract: the task queues hands hosts poll, and the inputs and outputs of their activities, as the
// session workflow, the git operations and the hands activities all see them.
import type { SandboxRecipe } from '../session/agent';
import type { SandboxToolKind } from '../tools/registry';

export const HANDS_TASK_QUEUE = 'hands';
export const hostTaskQueue = (hostId: string) => `hands.${hostId}`;

/** Who is asking: a call naming a session is refused unless the registry names that session the owner. */
export interface Caller {
  sessionId?: string;
}

/** How much of a command's output is streamed live; the result in the log holds all of it (capped as usual). */
export const LIVE_OUTPUT_BYTES = 256 * 1024;

export interface GitContext {
  sessionId: string;
  name: string;
  vault: string;
  /** `tenant`: the URL came through the API, so host git reaches it only through the egress gate. */
  repo: { url: string; ref?: string; commit?: string; credential?: string; path?: string; tenant?: true };
}

export interface ProvisionInput {
  sessionId: string;
  name: string;
  recipe: SandboxRecipe;
  resume?: string;
  /** The session's vault, for the recipe's repo credential reference. */
  vault?: string;
  /** Why the sandbox is provisioned again: `pause`, it was paused while idle (the restore note says so). */
  after?: 'pause';
  /**
   * A fork's sandbox: when the session has no snapshot of its own yet, a new workspace starts from this snapshot
   * of the source's sandbox of the same name, which the session takes as its own first.
   */
  restoreFrom?: { sessionId: string; snapshotSeq: number };
}

export interface ProvisionOutput {
  sandboxId: string;
  taskQueue: string;
  host: string;
  resumed: boolean;
  workspaceReused: boolean;
  runtime?: string;
  loosened: string[];
  /** The workspace was new and the sandbox's latest snapshot was written into it (src/hands/workspace-snapshots.ts). */
  restored?: WorkspaceRestore;
}

/** A snapshot restored into a new workspace at provision. */
export interface WorkspaceRestore {
  seq: number;
  /** When the snapshot was taken (ISO 8601). */
  takenAt: string;
  files: number;
  sizeBytes: number;
  /** How long the restore took. */
  ms: number;
  /** The source's snapshot a fork's first workspace was restored from (`seq` is the fork's own copy of it). */
  from?: { sessionId: string; snapshotSeq: number };
}

/** What pausing an idle sandbox did. */
export type PauseOutput =
  | {
      /** Captured and removed with its volumes: the next call provisions it again and restores `snapshotSeq`. */
      paused: true;
      /** The snapshot a restore will use (0: the workspace was never changed, the recipe gives it again). */
      snapshotSeq: number;
      /** The snapshot this pause took, when the workspace changed since the last one. */
      snapshot?: WorkspaceSnapshotTaken;
    }
  | {
      /** Stopped with its workspace volume kept, on this host. */
      paused: false;
      reason: string;
    };

/** A snapshot taken after a tool call: what the session log records of it (the content stays in the API's database). */
export interface WorkspaceSnapshotTaken {
  seq: number;
  files: number;
  sizeBytes: number;
  chunkCount: number;
  newChunks: number;
  newBytes: number;
}

export interface ExecuteInput extends Caller {
  sandboxId: string;
  toolUseId: string;
  tool: SandboxToolKind;
  input: unknown;
  timeoutSeconds: number;
  /** For git_push and git_pull: which repo, and which vault its credential reference resolves in. */
  git?: GitContext;
}

export interface ToolOutput {
  output: string;
  isError: boolean;
  /** The whole output, when `output` is cut: a file in the sandbox. */
  outputRef?: { path: string; bytes: number };
  /** The workspace snapshot this call's changes were captured in. */
  snapshot?: WorkspaceSnapshotTaken;
}
