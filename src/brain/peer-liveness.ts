// A brain worker that dies (SIGKILL, the OOM killer, a crash) is noticed by the other brain workers at once, not
// when the server has missed its heartbeats. Each brain worker serves the activities it is running on its stream
// endpoint (`GET /v1/worker/activities`, Server-Sent Events) and follows its peers' (found among the brain queue's
// pollers, whose identity names their endpoint). When a peer's stream breaks and its port then refuses the
// connection, or another process answers there, the peer is gone: a survivor fails each of the peer's activities by
// id with a retryable WorkerError.Lost. On a first attempt its next retry delay is a millisecond, so the server
// retries it on a live worker at once rather than after the retry policy's first interval (nothing failed that
// waiting would help); a later attempt keeps the policy's backoff. A peer that cannot be reached at all (its host
// gone, a network cut) proves nothing and is left to the heartbeat timeout, which stays the bound for that case and
// for a worker that had no peer watching.
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { z } from 'zod';
import { Failure } from '../session/failure-types';
import { openFrameStream } from '../stream/frames';
import { streamToken, streamUrlOf } from '../stream/token';

export const PEER_STREAM_PATH = '/v1/worker/activities';
/** What the peers' token is made for: not a session id (those have no colon), so no session's token opens it. */
export const PEER_TOKEN_SCOPE = 'worker:activities';
/** How often the brain queue's pollers are looked up for new peers. */
const DISCOVER_MS = 2000;
/** A poller not seen for this long is a worker that left; it is not followed. */
const POLLER_FRESH_MS = 60_000;
/** A peer that could not be reached is tried again after this long. */
const RETRY_MS = 1000;
/** The delay before a gone peer's activity is retried, on its first attempt: at once (the server ignores a zero delay). */
const LOST_RETRY_DELAY_MS = 1;
/** Activities of a gone peer failed at once, at most. */
const CONCURRENCY = 32;

const InflightSchema = z.object({
  workflowId: z.string(),
  runId: z.string(),
  activityId: z.string(),
  attempt: z.number().int(),
  activityType: z.string(),
});
export type Inflight = z.infer<typeof InflightSchema>;

export const PeerFrameSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('hello'),
    instance: z.string(),
    identity: z.string(),
    activities: z.array(InflightSchema),
  }),
  z.object({ type: z.literal('started'), activity: InflightSchema }),
  z.object({ type: z.literal('ended'), key: z.string() }),
]);
export type PeerFrame = z.infer<typeof PeerFrameSchema>;

const keyOf = (a: Pick<Inflight, 'workflowId' | 'runId' | 'activityId'>) =>
  `${a.workflowId}\n${a.runId}\n${a.activityId}`;

/** The activities this process is running, as its peers see them. */
export class InflightActivities {
  /** Tells this process from a later one that reuses its identity's address. */
  readonly instance = randomUUID();
  private readonly running = new Map<string, Inflight>();
  private readonly listeners = new Set<(f: PeerFrame) => void>();

  constructor(readonly identity: string) {}

  /** The activity interceptor that keeps the set: an activity counts from its start until it settles. */
  readonly interceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: {
      execute: async (input, next) => {
        const { workflowExecution, activityId, attempt, activityType } = ctx.info;
        if (!workflowExecution) return next(input);
        const a: Inflight = {
          workflowId: workflowExecution.workflowId,
          runId: workflowExecution.runId,
          activityId,
          attempt,
          activityType,
        };
        const key = keyOf(a);
        this.running.set(key, a);
        this.emit({ type: 'started', activity: a });
        try {
          return await next(input);
        } finally {
          if (this.running.get(key) === a) {
            this.running.delete(key);
            this.emit({ type: 'ended', key });
          }
        }
      },
    },
  });

  /** Calls `fn` with the whole set (a hello), then with each change; returns the unsubscribe. */
  subscribe(fn: (f: PeerFrame) => void): () => void {
    fn({ type: 'hello', instance: this.instance, identity: this.identity, activities: [...this.running.values()] });
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(f: PeerFrame): void {
    for (const fn of this.listeners) fn(f);
  }
}

interface Peer {
  identity: string;
  url: string;
  req?: http.ClientRequest;
  /** The process that said hello; unset until one did. */
  instance?: string;
  activities: Map<string, Inflight>;
}

export interface PeerWatchOptions {
  client: Client;
  namespace: string;
  /** The task queue whose activity pollers are the peers. */
  taskQueue: string;
  /** This process's own set (its identity is left out of the peers). */
  self: InflightActivities;
  /** The codec key the peers' tokens are made with. */
  key: Buffer;
  log: (msg: string) => void;
}

export interface PeerWatchStatus {
  /** Peers followed, with the activities each is running. */
  peers: { identity: string; activities: number }[];
  /** Peers found gone, and the activities failed for them. */
  gone: number;
  failed: number;
}

export class PeerWatch {
  private readonly peers = new Map<string, Peer>();
  /** Peers found gone or unreachable, by identity, with when: their pollers linger in the queue's list for a while. */
  private readonly skipped = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private gone = 0;
  private failed = 0;

  constructor(private readonly o: PeerWatchOptions) {}

  start(): void {
    void this.discover();
    this.timer = setInterval(() => void this.discover(), DISCOVER_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    for (const p of this.peers.values()) p.req?.destroy();
    this.peers.clear();
  }

  status(): PeerWatchStatus {
    return {
      peers: [...this.peers.values()]
        .filter((p) => p.instance)
        .map((p) => ({ identity: p.identity, activities: p.activities.size })),
      gone: this.gone,
      failed: this.failed,
    };
  }

  private async discover(): Promise<void> {
    let pollers: temporal.api.taskqueue.v1.IPollerInfo[];
    try {
      const res = await this.o.client.workflowService.describeTaskQueue({
        namespace: this.o.namespace,
        taskQueue: { name: this.o.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      });
      pollers = res.pollers ?? [];
    } catch {
      return; // The next round asks again.
    }
    const now = Date.now();
    for (const [identity, at] of this.skipped) if (now - at > POLLER_FRESH_MS) this.skipped.delete(identity);
    for (const p of pollers) {
      const identity = p.identity ?? '';
      const url = streamUrlOf(identity);
      const seen = p.lastAccessTime?.seconds ? Number(p.lastAccessTime.seconds) * 1000 : 0;
      if (
        this.stopped ||
        !url ||
        identity === this.o.self.identity ||
        this.peers.has(identity) ||
        this.skipped.has(identity) ||
        now - seen > POLLER_FRESH_MS
      )
        continue;
      const peer: Peer = { identity, url, activities: new Map() };
      this.peers.set(identity, peer);
      this.follow(peer);
    }
  }

  private follow(peer: Peer): void {
    let answered = false;
    peer.req = openFrameStream<PeerFrame>(
      new URL(PEER_STREAM_PATH, peer.url),
      { authorization: `Bearer ${streamToken(this.o.key, PEER_TOKEN_SCOPE)}` },
      (f) => {
        if (f.type === 'hello') {
          if (f.identity !== peer.identity || (peer.instance !== undefined && f.instance !== peer.instance)) {
            peer.req?.destroy();
            return void this.lost(peer, 'another process answers at its address');
          }
          answered = true;
          peer.instance = f.instance;
          peer.activities = new Map(f.activities.map((a) => [keyOf(a), a]));
        } else if (f.type === 'started') peer.activities.set(keyOf(f.activity), f.activity);
        else peer.activities.delete(f.key);
      },
      (why) => {
        if (this.stopped || this.peers.get(peer.identity) !== peer) return;
        if (answered) return this.follow(peer); // The stream broke: connect again at once, which tells.
        if (peer.instance === undefined) {
          // Never reached: a poller that left, or a worker this one cannot reach; discovery may bring it back.
          this.peers.delete(peer.identity);
          this.skipped.set(peer.identity, Date.now());
          return;
        }
        // A port nobody listens on is a process that exited; anything else (a timeout, no route) proves nothing.
        if (/ECONNREFUSED/.test(why)) return void this.lost(peer, 'its stream broke and its port refuses connections');
        setTimeout(() => {
          if (!this.stopped && this.peers.get(peer.identity) === peer) this.follow(peer);
        }, RETRY_MS).unref();
      },
      (raw) => PeerFrameSchema.safeParse(raw).data,
    );
  }

  private async lost(peer: Peer, why: string): Promise<void> {
    this.peers.delete(peer.identity);
    this.skipped.set(peer.identity, Date.now());
    this.gone++;
    const activities = [...peer.activities.values()];
    if (activities.length === 0) return;
    this.o.log(
      `brain worker ${peer.identity} is gone (${why}); retrying its ${activities.length} running activit${activities.length === 1 ? 'y' : 'ies'} on live workers`,
    );
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, activities.length) }, async () => {
        for (let a = activities.shift(); a; a = activities.shift()) await this.failOne(peer, a, why);
      }),
    );
  }

  /** Fails the activity if the server still has that very attempt running on the gone peer. */
  private async failOne(peer: Peer, a: Inflight, why: string): Promise<void> {
    const execution = { workflowId: a.workflowId, runId: a.runId };
    try {
      const d = await this.o.client.workflowService.describeWorkflowExecution({
        namespace: this.o.namespace,
        execution,
      });
      const p = d.pendingActivities?.find((x) => x.activityId === a.activityId);
      const started = p?.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED;
      // Already retried (its heartbeat timed out first), or started anew elsewhere: not the peer's to fail.
      if (!p || !started || p.attempt !== a.attempt || p.lastWorkerIdentity !== peer.identity) return;
      // First, so that nothing the retry does reaches the gone worker's sticky queue: neither the query by which the
      // retried call reads its context (which would wait there for the sticky timeout) nor the task taking its result.
      await this.o.client.workflowService
        .resetStickyTaskQueue({ namespace: this.o.namespace, execution })
        .catch(() => undefined);
      await this.o.client.activity.fail(
        { ...execution, activityId: a.activityId },
        ApplicationFailure.create({
          message: `the worker running this ${a.activityType} (${peer.identity}) is gone: ${why}`,
          type: Failure.Worker.Lost,
          // A later attempt keeps the policy's backoff: a call that kills every worker it runs on does not hop at once.
          ...(a.attempt === 1 ? { nextRetryDelay: LOST_RETRY_DELAY_MS } : {}),
        }),
      );
      this.failed++;
    } catch (err) {
      this.o.log(
        `retrying ${a.activityType} of ${a.workflowId} after its worker left failed: ${(err as Error).message}`,
      );
    }
  }
}
