// What every route is given: the fastify instance typed for zod schemas, and the storage behind it.
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Client } from '@temporalio/client';
import type { SessionArchive } from '../archive';
import type { SessionLog } from '../log/session-log';
import type { PriceTable } from '../observability/pricing';
import type { Db } from '../storage/db';
import type { BlobStore } from '../storage/blobs';
import type { EgressGate } from '../egress';
import type { SchedulePolicy } from './deployment-schedules';

export type ApiApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/** What one workspace may use (src/api/quotas.ts). */
export interface Quotas {
  /** Requests per key per window; absent: unlimited. */
  rate?: { max: number; windowMs: number };
  /** Sessions a workspace may have open at once; absent: unlimited. */
  sessions?: number;
  eventsPerSend: number;
}

export interface ApiDeps {
  db: Db;
  /** The vault public key (base64) that credential secrets are sealed to. */
  vaultPublicKey: string;
  /** Model prices for the console's cost column (MODEL_PRICES over the built-in table). */
  prices?: PriceTable;
  /** Refuses tenant URLs the workers would not connect to (EGRESS_ALLOW); unset, a gate that opens nothing. */
  egress?: EgressGate;
  /** What one workspace may use (src/api/quotas.ts); absent: no rate limit and no session quota. */
  quotas?: Quotas;
  /** Contents of files, skills and memories, in `db`, sealed under CODEC_KEY (src/storage/blobs.ts). */
  blobs: BlobStore;
  /** SELF_HOSTED_TOOL_TIMEOUT_SECONDS: how long a self-hosted session waits for a toolset call's answer; absent: 120. */
  selfHostedToolTimeoutSeconds?: number;
  /** The Files API's limits (FILES_MAX_BYTES, STORAGE_QUOTA_BYTES); absent: 100 MiB a file and no quota. */
  files?: FileLimits;
  /** The leases of self-hosted work items (WORK_LEASE_*_SECONDS); absent: 90 s, asks clamped to 10-600 s. */
  workLease?: WorkLease;
  /** Deployments' Schedules: overlap and catch-up (DEPLOYMENT_*); absent: buffer_all and 300 s. */
  deploymentSchedules?: SchedulePolicy;
}

/** The lease a heartbeat grants a work item (src/api/environment-work.ts), in seconds. */
export interface WorkLease {
  ttlSeconds: number;
  minTtlSeconds: number;
  maxTtlSeconds: number;
}

/** What the Files API takes (src/api/files.ts). */
export interface FileLimits {
  /** The largest upload, in bytes, at most MAX_BLOB_BYTES. */
  maxBytes: number;
  /** Bytes of live files a workspace may hold; absent: no quota. */
  quotaBytes?: number;
}

/** One route the server registered; `refused` when it always answers 400, and why. */
export interface ApiRoute {
  method: string;
  url: string;
  refused?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    apiRoutes: ApiRoute[];
  }
  interface FastifyContextConfig {
    /** A route the SDK has that is answered with a 400: why (docs/api.md's compatibility table shows it). */
    refused?: string;
  }
  interface FastifyRequest {
    /** The workspace of the request's API key; set by the auth hook on every /v1 route but the OpenAPI document. */
    workspaceId: string;
    /** That workspace's name, which sessions carry as their AgentWorkspace search attribute. */
    workspace: string;
    /** The id of the request's API key (never the key): what the rate limit counts and the audit trail records. */
    apiKeyId?: string;
    /** Who presented the request's credential: a workspace API key, an environment key, or a work item's sessions token. */
    principal: Principal;
    requestId: string;
  }
}

/**
 * The credential behind a request. An API key reaches its workspace. An environment key (the operator-minted standing
 * credential of a self-hosted worker) reaches only its environment's work queue. A sessions token (minted per claim of
 * a work item, carried in the item's `secret`) reaches only that item's session: reading it, posting tool results, its
 * agent's skills and its memory stores; `live` is false once the claim's lease has ended (a late heartbeat then gets 412).
 */
export type Principal =
  | { kind: 'api_key'; keyId: string }
  | { kind: 'environment_key'; keyId: string; environmentId: string }
  | { kind: 'sessions_token'; workId: string; environmentId: string; sessionId: string; live: boolean };

/** What sessions need beyond storage: Temporal, and the log as workers write it. */
export interface SessionDeps {
  client: Client;
  log: SessionLog;
  /** The session archive the workers seal into (the log reads it too); a session delete removes its segments. */
  archive: SessionArchive;
  /** The codec key workers' stream tokens derive from: with it, the API relays live previews (GET /v1/sessions/{id}/stream). */
  streamKey?: Buffer;
}
