// Hands activities: provision, execute, stop and destroy sandboxes, and copy files, on a hands host.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { formatIssues } from '../session/agent';
import {
  LIVE_OUTPUT_BYTES,
  hostTaskQueue,
  type Caller,
  type ExecuteInput,
  type ProvisionInput,
  type PauseOutput,
  type ProvisionOutput,
  type ToolOutput,
  type WorkspaceRestore,
  type WorkspaceSnapshotTaken,
} from './hands-contract';
import { MAX_TOOL_OUTPUT_CHARS } from '../tools/kind';
import { redact, type SecretVault } from '../vault';
import { GitError } from '../sandbox/host-git';
import { createGitOps } from './git-ops';
import type { EgressGate } from '../egress';
import { MAX_FILE_BYTES } from '../session/paths';
import { SandboxLostError, type SandboxProvider } from '../sandbox/provider';
import { RuntimeUnavailableError } from '../sandbox/runtime';
import { SetupFailedError } from '../sandbox/docker';
import { OwnershipError, type OwnershipRegistry } from '../sandbox/ownership';
import { toolKind } from '../tools/registry';
import { sandboxRunner, type RunContext } from './tool-runners';
import type { StreamHub } from '../stream';
import { StringDecoder } from 'node:string_decoder';
import { Failure } from '../session/failure-types';
import { RepoTokenError, type RepoTokens } from './repo-tokens';
import { SealError } from '../vault/sealed';
import { SandboxQuotaError, leaseIsLive, type SandboxQuota } from './sandbox-quota';
import type { MountData } from './mount-data';
import { MountDataError, sessionMountsHands, withMounts } from './session-mounts';
import { SnapshotGoneError, SnapshotRefusedError, ageOf, type WorkspaceSnapshots } from './workspace-snapshots';
import type { HomeKept, SandboxHomes } from './sandbox-home';

/** Tools that only read the workspace: no snapshot follows them. */
const READ_ONLY_TOOLS = new Set(['read', 'glob', 'grep']);

export { formatBashOutput } from './tool-runners';
export {
  HANDS_TASK_QUEUE,
  LIVE_OUTPUT_BYTES,
  hostTaskQueue,
  type Caller,
  type ExecuteInput,
  type GitContext,
  type ProvisionInput,
  type ProvisionOutput,
  type ToolOutput,
} from './hands-contract';

export interface HandsDeps {
  provider: SandboxProvider;
  hostId: string;
  /** Present only where VAULT_KEY is: the hands host resolves repo credentials itself. */
  vault?: SecretVault;
  /** Opens API sessions' repository tokens; present where VAULT_KEY and the API's database are. */
  repoTokens?: RepoTokens;
  /** Where host-side git mirrors live (the same directory the provider clones through). */
  mirrorsDir?: string;
  /** Where bash output is published live for `agents watch`; absent: not streamed. */
  stream?: StreamHub;
  /** Who owns each sandbox of this host; without it every caller is trusted (tests of the provider alone). */
  registry?: OwnershipRegistry;
  /** Checks a tenant's repository (from the API) before git_push and git_pull reach it. */
  egress?: EgressGate;
  /** SANDBOX_QUOTA, counted in the API's database; absent: no quota. */
  quota?: SandboxQuota;
  /** API sessions' files, memory stores and skills (src/hands/mount-data.ts); absent: no session has mounts here. */
  mountData?: MountData;
  /** Where what each sandbox was given of its mounts is recorded (beside the ownership registry); absent: memory only. */
  mountStateDir?: string;
  /** Workspace snapshots to the API's database (src/hands/workspace-snapshots.ts); absent: none taken or restored. */
  snapshots?: WorkspaceSnapshots;
  /** Home directories kept across a pause (src/hands/sandbox-home.ts); absent: a resumed sandbox starts without. */
  homes?: SandboxHomes;
}

/** What a resume after a pause says when no home directory was kept for it. */
const PAUSED_HOME_LOST = 'its processes and home directory were not kept';

/** Heartbeats while `fn` runs, so a dead host is noticed within the heartbeat timeout, not the command's. */
async function heartbeating<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 1000);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(beat);
  }
}

function denied(message: string): never {
  throw ApplicationFailure.create({ message, type: Failure.Sandbox.Denied, nonRetryable: true });
}

function lost(err: unknown): never {
  if (err instanceof SandboxLostError)
    throw ApplicationFailure.create({ message: err.message, type: Failure.Sandbox.Lost, nonRetryable: true });
  throw err;
}

export function createHandsActivities(deps: HandsDeps) {
  const { provider, hostId } = deps;

  /** The token behind a credential reference: the session's own vault's, or its own API resource's. */
  const credential = async (
    sessionId: string,
    vault: string | undefined,
    ref: string | undefined,
  ): Promise<string | undefined> => {
    if (!ref) return undefined;
    if (ref.startsWith('resource:')) {
      if (!deps.repoTokens)
        throw ApplicationFailure.create({
          message: `this hands host cannot open ${ref}: it needs DATABASE_URL (the API's database) and VAULT_KEY`,
          type: Failure.Vault.Unavailable,
          nonRetryable: true,
        });
      try {
        return await deps.repoTokens(sessionId, ref);
      } catch (err) {
        if (err instanceof RepoTokenError || err instanceof SealError)
          throw ApplicationFailure.create({ message: err.message, type: Failure.Vault.Missing, nonRetryable: true });
        throw err;
      }
    }
    if (!deps.vault)
      throw ApplicationFailure.create({
        message: `this hands host has no VAULT_KEY, so it cannot use ${ref}`,
        type: Failure.Vault.Unavailable,
        nonRetryable: true,
      });
    try {
      return await deps.vault.resolve(vault ?? 'default', ref);
    } catch (err) {
      throw ApplicationFailure.create({
        message: `${(err as Error).message} (the session is bound to vault ${vault ?? 'default'})`,
        type: Failure.Vault.Missing,
        nonRetryable: true,
      });
    }
  };

  const git = createGitOps(provider, deps.mirrorsDir, deps.egress);
  /** What a restore at provision tells the model, given with the first result of a call on that sandbox. */
  const restoreNotes = new Map<string, string>();

  /**
   * After a call that may have changed the workspace: captures it when it changed. A refusal (over a limit) or a
   * failure is said in the result; the call's own result stands.
   */
  const snapshotAfter = async (sandboxId: string, tool: string, result: ToolOutput): Promise<ToolOutput> => {
    let out = result;
    const notes: string[] = [];
    const restored = restoreNotes.get(sandboxId);
    if (restored) {
      notes.push(restored);
      restoreNotes.delete(sandboxId);
    }
    if (deps.snapshots && !READ_ONLY_TOOLS.has(tool)) {
      try {
        const r = await heartbeating(() => deps.snapshots!.capture(sandboxId));
        if (r.snapshot) out = { ...out, snapshot: r.snapshot };
        if (r.skipped.length > 0)
          notes.push(
            `[workspace snapshot: not captured (a snapshot holds regular files and links only): ${r.skipped.slice(0, 5).join(', ')}${r.skipped.length > 5 ? ` and ${r.skipped.length - 5} more` : ''}]`,
          );
      } catch (err) {
        if (err instanceof SandboxLostError) return out;
        if (err instanceof SnapshotRefusedError) notes.push(`[error: ${err.message}]`);
        else {
          Context.current().log.warn('workspace snapshot failed', { sandboxId, error: (err as Error).message });
          notes.push(`[workspace snapshot failed, the last one stays: ${(err as Error).message}]`);
        }
      }
    }
    if (notes.length === 0) return out;
    const text = notes.join('\n');
    return { ...out, output: out.output ? `${out.output}\n\n${text}` : text };
  };
  const mounts = deps.mountData && sessionMountsHands(provider, deps.mountData, deps.mountStateDir);

  /** Refuses a caller the registry does not name as the sandbox's owner. */
  const checkOwner = (sandboxId: string, caller: Caller) => {
    const entry = deps.registry?.get(sandboxId);
    if (entry && caller.sessionId !== undefined && entry.owner !== caller.sessionId) {
      denied(
        `sandbox ${sandboxId.slice(0, 12)} was handed to session ${entry.owner}; this session (${caller.sessionId}) may no longer use it`,
      );
    }
  };

  /**
   * Before a sandbox stops (its session idle) or goes (its session ended): what was written to its outputs and
   * read-write memory stores since the last tool call (by a process left running) is collected, as after a tool
   * call. Nothing stops the sandbox from going: a collection that fails is logged.
   */
  const collectLast = async (input: { sandboxId: string } & Caller): Promise<void> => {
    const sessionId = input.sessionId;
    if (!mounts || sessionId === undefined) return;
    try {
      // A sandbox stopped earlier (idle) was collected then.
      if ((await provider.health(input.sandboxId)) !== 'running') return;
      const notes = await heartbeating(() => mounts.afterTool(sessionId, input.sandboxId));
      if (notes) Context.current().log.info('collected before the sandbox stopped', { sessionId, notes });
    } catch (err) {
      Context.current().log.warn('could not collect outputs and memory before the sandbox stopped', {
        sessionId,
        error: (err as Error).message,
      });
    }
  };

  /** Before a sandbox stops for idleness: what a process left running changed is captured; a failure is logged. */
  const snapshotLast = async (sandboxId: string): Promise<void> => {
    if (!deps.snapshots) return;
    try {
      if ((await provider.health(sandboxId)) !== 'running') return;
      await heartbeating(() => deps.snapshots!.capture(sandboxId));
    } catch (err) {
      Context.current().log.warn('could not snapshot the workspace before the sandbox stopped', {
        sandboxId,
        error: (err as Error).message,
      });
    }
  };

  /** Removes a sandbox with its volumes, and everything this host keeps of it. */
  const removeSandbox = async (sandboxId: string): Promise<void> => {
    await provider.destroy(sandboxId);
    deps.registry?.remove(sandboxId);
    mounts?.forget(sandboxId);
    deps.snapshots?.forget(sandboxId);
    restoreNotes.delete(sandboxId);
    await deps.quota?.release(sandboxId);
  };

  /** A place in the workspace's SANDBOX_QUOTA, or a non-retryable failure saying the workspace is at it. */
  const takeLease = async (sessionId: string, name: string): Promise<string | undefined> => {
    if (!deps.quota) return undefined;
    const client = Context.current().client;
    try {
      return await deps.quota.acquire(sessionId, name, hostId, (lease) => leaseIsLive(client, lease));
    } catch (err) {
      if (err instanceof SandboxQuotaError)
        throw ApplicationFailure.create({ message: err.message, type: Failure.Sandbox.Quota, nonRetryable: true });
      throw err;
    }
  };

  return {
    async provisionSandbox(input: ProvisionInput): Promise<ProvisionOutput> {
      const repoToken = await credential(input.sessionId, input.vault, input.recipe.repo?.credential);
      if (input.resume) checkOwner(input.resume, input);
      if (input.restoreFrom && !deps.snapshots)
        throw ApplicationFailure.create({
          message: `this hands host keeps no workspace snapshots (it needs DATABASE_URL, and SNAPSHOT_RETAIN above 0), so it cannot give the fork sandbox ${input.name} the workspace of session ${input.restoreFrom.sessionId}`,
          type: Failure.Sandbox.SetupFailed,
          nonRetryable: true,
        });
      const lease = await takeLease(input.sessionId, input.name);
      let restore: WorkspaceRestore | undefined;
      try {
        const r = await heartbeating(() =>
          provider.provision({
            sessionId: input.sessionId,
            name: input.name,
            recipe: input.recipe,
            hostId,
            resume: input.resume,
            repoToken,
          }),
        );
        if (lease) await deps.quota!.bind(lease, r.sandboxId);
        try {
          deps.registry?.claim(r.sandboxId, input.sessionId, input.name);
        } catch (err) {
          if (err instanceof OwnershipError) denied(err.message);
          throw err;
        }
        try {
          if (deps.snapshots) {
            deps.snapshots.track(r.sandboxId, input.sessionId, input.name, input.recipe.workdir);
            // A new workspace volume (another host's sandbox, or one reaped) gets the latest snapshot first; so does
            // a fork's sandbox until a provision of it succeeds (an earlier one may have left a recipe's workspace).
            if ((!r.workspaceReused && !r.resumed) || input.restoreFrom) {
              const startedAt = Date.now();
              const restored = await heartbeating(() => deps.snapshots!.restore(r.sandboxId, input.restoreFrom));
              if (restored) {
                restore = {
                  seq: restored.seq,
                  takenAt: restored.createdAt,
                  files: restored.files,
                  sizeBytes: restored.sizeBytes,
                  ms: Date.now() - startedAt,
                  ...(restored.from ? { from: restored.from } : {}),
                };
                const source = restored.from
                  ? `snapshot ${restored.from.snapshotSeq} of session ${restored.from.sessionId}`
                  : `snapshot ${restored.seq}`;
                const what = `workspace restored on host ${hostId} from ${source} (taken ${ageOf(restored.createdAt)} ago, ${restored.files} files, ${restored.sizeBytes} bytes)`;
                restoreNotes.set(
                  r.sandboxId,
                  restored.from
                    ? `[${what}, the last one at or before the fork point: this session was forked from it; processes were not restored]`
                    : input.after === 'pause'
                      ? `[${what}: the sandbox was paused while idle and resumed here; ${PAUSED_HOME_LOST}]`
                      : `[${what}: changes made after it, in the call that was running when the sandbox was lost, are not in it; processes were not restored]`,
                );
              }
            }
          }
          // A sandbox resumed after a pause gets the home directory the pause kept, said beside its workspace. One
          // that cannot be put back is said instead: the sandbox and its workspace still go to the call.
          if (input.after === 'pause' && deps.homes && !r.workspaceReused && !r.resumed && !input.restoreFrom) {
            const home = await heartbeating(() => deps.homes!.restore(r.sandboxId, input)).catch((err: Error) => {
              Context.current().log.warn("a paused sandbox's home directory could not be put back", {
                sandboxId: r.sandboxId,
                error: err.message,
              });
              return err;
            });
            if (home) {
              const kept =
                home instanceof Error
                  ? `its home directory could not be put back (${home.message}); its processes were not kept`
                  : `its home directory put back (${home.sizeBytes} bytes, kept ${ageOf(home.keptAt.toISOString())} ago, without ~/.cache); its processes were not kept`;
              const note = restoreNotes.get(r.sandboxId);
              restoreNotes.set(
                r.sandboxId,
                note
                  ? note.replace(PAUSED_HOME_LOST, kept)
                  : `[sandbox resumed on host ${hostId} after a pause while idle, with ${kept}]`,
              );
            }
          }
          await heartbeating(async () => mounts?.provisioned(input.sessionId, r.sandboxId));
        } catch (err) {
          // A sandbox without its mounts is not handed out: the workflow sees the provision fail.
          await provider.destroy(r.sandboxId, { keepWorkspace: true }).catch(() => undefined);
          deps.registry?.remove(r.sandboxId);
          mounts?.forget(r.sandboxId);
          deps.snapshots?.forget(r.sandboxId);
          restoreNotes.delete(r.sandboxId);
          throw err;
        }
        return { ...r, taskQueue: hostTaskQueue(hostId), host: hostId, ...(restore ? { restored: restore } : {}) };
      } catch (err) {
        if (lease) await deps.quota!.drop(lease).catch(() => undefined);
        const message = redact((err as Error).message, repoToken ? [repoToken] : []);
        if (
          err instanceof SetupFailedError ||
          err instanceof GitError ||
          err instanceof MountDataError ||
          err instanceof SnapshotGoneError
        )
          throw ApplicationFailure.create({ message, type: Failure.Sandbox.SetupFailed, nonRetryable: true });
        if (err instanceof RuntimeUnavailableError)
          throw ApplicationFailure.create({ message, type: Failure.Sandbox.Runtime, nonRetryable: true });
        throw ApplicationFailure.create({
          message: `provisioning failed: ${message}`,
          type: Failure.Sandbox.Provision,
        });
      }
    },

    async execute(input: ExecuteInput): Promise<ToolOutput> {
      checkOwner(input.sandboxId, input);
      const kind = toolKind(input.tool);
      const runner = sandboxRunner(kind);
      if (!kind || !runner)
        return { output: `unknown sandbox tool: ${String(input.tool).slice(0, 100)}`, isError: true };
      const parsed = kind.input.safeParse(input.input ?? {});
      if (!parsed.success)
        return { output: `invalid input for ${input.tool}: ${formatIssues(parsed.error)}`, isError: true };
      // The run-once key: tool_use ids are unique within a session, and a handed-off sandbox serves several.
      const key = input.sessionId !== undefined ? `${input.sessionId}.${input.toolUseId}` : input.toolUseId;
      const ctx: RunContext = {
        call: input,
        streamed(req) {
          const info = Context.current().info;
          const sessionId = info.workflowExecution?.workflowId;
          const live = sessionId
            ? deps.stream?.open(sessionId, { kind: 'tool', toolUseId: input.toolUseId, tool: input.tool }, info.attempt)
            : undefined;
          const utf8 = new StringDecoder('utf8');
          const onOutput = live && ((chunk: Buffer) => live.write(utf8.write(chunk)));
          return heartbeating((signal) =>
            provider.execute(
              input.sandboxId,
              { ...req, key, maxOutputBytes: MAX_TOOL_OUTPUT_CHARS, onOutput, liveBytes: LIVE_OUTPUT_BYTES },
              signal,
            ),
          )
            .catch(lost)
            .finally(() => live?.close());
        },
        python: (program, env, stdin) =>
          heartbeating((signal) =>
            provider.execute(
              input.sandboxId,
              {
                key,
                script: `exec python3 -c "$${program}"`,
                env,
                stdin: Buffer.from(JSON.stringify(stdin)),
                timeoutSeconds: input.timeoutSeconds,
                maxOutputBytes: MAX_TOOL_OUTPUT_CHARS,
              },
              signal,
            ),
          ).catch(lost),
        async git(op, gitInput) {
          if (!input.git) return { output: `${input.tool} needs a repo on this sandbox`, isError: true };
          const token = await credential(input.git.sessionId, input.git.vault, input.git.repo.credential);
          const run = op === 'push' ? git.push : git.pull;
          return heartbeating(() => run(input.sandboxId, key, input.git!, gitInput, token)).catch(lost);
        },
      };
      if (input.sessionId === undefined) return runner(ctx, parsed.data);
      const out = mounts
        ? await withMounts(
            mounts,
            input.sessionId,
            input.sandboxId,
            () => runner(ctx, parsed.data),
            heartbeating,
          ).catch(lost)
        : await runner(ctx, parsed.data);
      return snapshotAfter(input.sandboxId, input.tool, out);
    },

    async stopSandbox(input: { sandboxId: string } & Caller): Promise<void> {
      checkOwner(input.sandboxId, input);
      await collectLast(input);
      await snapshotLast(input.sandboxId);
      await provider.stop(input.sandboxId);
      await deps.quota?.release(input.sandboxId);
    },

    /**
     * A sandbox idle past its idle timeout: its workspace is captured and the sandbox removed with its volumes,
     * freeing the host; the next call provisions it again on any host and restores the snapshot. A workspace that
     * cannot be captured (snapshots off on this host, over a limit, the capture failed) is stopped instead, its
     * volume kept, as before snapshots existed.
     */
    async pauseSandbox(input: { sandboxId: string } & Caller): Promise<PauseOutput> {
      checkOwner(input.sandboxId, input);
      await collectLast(input);
      const stopInstead = async (reason: string): Promise<PauseOutput> => {
        await provider.stop(input.sandboxId);
        await deps.quota?.release(input.sandboxId);
        return { paused: false, reason };
      };
      const snapshots = deps.snapshots;
      if (!snapshots || !snapshots.tracked(input.sandboxId))
        return stopInstead(`hands host ${hostId} keeps no workspace snapshots`);
      let snapshot: WorkspaceSnapshotTaken | undefined;
      if ((await provider.health(input.sandboxId)) === 'running') {
        try {
          snapshot = (await heartbeating(() => snapshots.capture(input.sandboxId))).snapshot;
        } catch (err) {
          Context.current().log.warn('idle sandbox not paused: its workspace could not be captured', {
            sandboxId: input.sandboxId,
            error: (err as Error).message,
          });
          return stopInstead(`its workspace could not be captured: ${(err as Error).message}`);
        }
      }
      // A sandbox stopped earlier was captured when it stopped, or after its last call.
      const seq = snapshots.latest(input.sandboxId) ?? 0;
      // Its home directory too, read by the engine whether the sandbox runs or stopped; the resume says what came back.
      const ref = deps.homes ? await provider.origin(input.sandboxId) : undefined;
      if (ref) {
        const home = await heartbeating(() => deps.homes!.keep(input.sandboxId, ref)).catch((err: Error): HomeKept => ({
          kept: false,
          reason: `it could not be read: ${err.message}`,
        }));
        if (!home.kept)
          Context.current().log.warn("a paused sandbox's home directory was not kept", {
            sandboxId: input.sandboxId,
            reason: home.reason,
          });
      }
      await removeSandbox(input.sandboxId);
      return { paused: true, snapshotSeq: seq, ...(snapshot ? { snapshot } : {}) };
    },

    async destroySandbox(input: { sandboxId: string } & Caller): Promise<void> {
      checkOwner(input.sandboxId, input);
      await collectLast(input);
      await removeSandbox(input.sandboxId);
    },

    /** Hands a sandbox from session `from` to session `to`: the container stays; the registry's owner changes. */
    async transferSandbox(input: {
      sandboxId: string;
      name: string;
      from: string;
      to: string;
    }): Promise<{ owner: string }> {
      if (!deps.registry)
        throw ApplicationFailure.create({
          message: `hands host ${hostId} keeps no ownership registry`,
          type: Failure.Sandbox.NoRegistry,
          nonRetryable: true,
        });
      if ((await provider.health(input.sandboxId)) === 'missing')
        throw ApplicationFailure.create({
          message: `sandbox ${input.sandboxId.slice(0, 12)} no longer exists`,
          type: Failure.Sandbox.Lost,
          nonRetryable: true,
        });
      try {
        const owner = deps.registry.transfer(input.sandboxId, input.from, input.to, input.name).owner;
        await deps.quota?.transfer(input.sandboxId, input.to, input.name);
        return { owner };
      } catch (err) {
        if (err instanceof OwnershipError) denied(err.message);
        throw err;
      }
    },

    async putFile(
      input: { sandboxId: string; key: string; path: string; contentBase64: string } & Caller,
    ): Promise<{ bytes: number }> {
      checkOwner(input.sandboxId, input);
      const bytes = Buffer.from(input.contentBase64, 'base64');
      if (bytes.length > MAX_FILE_BYTES)
        throw ApplicationFailure.create({
          message: `file is ${bytes.length} bytes; the limit is ${MAX_FILE_BYTES}`,
          type: Failure.Files.TooLarge,
          nonRetryable: true,
        });
      const r = await heartbeating(() =>
        provider.execute(input.sandboxId, {
          key: input.key,
          script: 'mkdir -p -- "$(dirname -- "$MA_PATH")" && cat > "$MA_PATH"',
          env: { MA_PATH: input.path },
          stdin: bytes,
          timeoutSeconds: 60,
          maxOutputBytes: 4096,
        }),
      ).catch(lost);
      if (r.exitCode !== 0)
        throw ApplicationFailure.create({
          message: `cannot write ${input.path}: ${r.output.trim()}`,
          type: Failure.Files.Write,
          nonRetryable: true,
        });
      return { bytes: bytes.length };
    },

    async getFile(
      input: { sandboxId: string; key: string; path: string } & Caller,
    ): Promise<{ contentBase64: string; bytes: number }> {
      checkOwner(input.sandboxId, input);
      const script =
        's=$(stat -c %s -- "$MA_PATH" 2>&1) || { echo "no such file: $MA_PATH"; exit 2; }; [ -f "$MA_PATH" ] || { echo "not a regular file: $MA_PATH"; exit 2; }; [ "$s" -le "$MA_LIMIT" ] || { echo "file is $s bytes; the limit is $MA_LIMIT"; exit 3; }; base64 -w0 -- "$MA_PATH"';
      const r = await heartbeating(() =>
        provider.execute(input.sandboxId, {
          key: input.key,
          script,
          env: { MA_PATH: input.path, MA_LIMIT: String(MAX_FILE_BYTES) },
          timeoutSeconds: 60,
          maxOutputBytes: Math.ceil((MAX_FILE_BYTES * 4) / 3) + 4096,
        }),
      ).catch(lost);
      if (r.exitCode !== 0)
        throw ApplicationFailure.create({ message: r.output.trim(), type: Failure.Files.Read, nonRetryable: true });
      const content = r.output.trim();
      return { contentBase64: content, bytes: Buffer.from(content, 'base64').length };
    },
  };
}

export type HandsActivities = ReturnType<typeof createHandsActivities>;
