// The API's resources as the console reads them (the fields it shows; the SDK's types have the rest). Environments
// and their work queue are the SDK's own types: type-only imports, which the bundle drops.
import type { Usage } from './formatters';

export type { BetaEnvironment as Environment } from '@anthropic-ai/sdk/resources/beta/environments/environments';
export type {
  BetaSelfHostedWork as WorkItem,
  BetaSelfHostedWorkQueueStats as QueueStats,
} from '@anthropic-ai/sdk/resources/beta/environments/work';

/** A worker that polled the environment's queue lately, as GET /v1/environments/{id}/work/workers lists it. */
export interface QueueWorker {
  /** The `Anthropic-Worker-ID` it polls with. */
  worker_id: string;
  last_polled_at: string;
  /** The work items it holds. */
  work_ids: string[];
}

export interface Agent {
  id: string;
  name: string;
  version: number;
  model: string | { id: string };
  archived_at: string | null;
}

/** A sum of money as the API writes it: whole minor units (cents) as a decimal string. */
export interface Money {
  amount: string;
  currency: string;
}

/** An outcome's latest evaluation, as `session.outcome_evaluations` lists it. */
export interface OutcomeEvaluation {
  outcome_id: string;
  description: string;
  result: string;
  iteration: number;
  explanation: string | null;
  completed_at: string | null;
}

/** A thread of a session, as GET /v1/sessions/{id}/threads lists it (the primary thread first). */
export interface SessionThread {
  id: string;
  agent: { name: string };
  status: 'rescheduling' | 'running' | 'idle' | 'terminated';
  parent_thread_id: string | null;
  archived_at: string | null;
  created_at: string;
}

export interface Session {
  id: string;
  title: string | null;
  status: 'rescheduling' | 'running' | 'idle' | 'terminated';
  agent: Agent;
  environment_id: string;
  usage: Usage & { list_cost?: Money };
  budget?: { type: 'limit'; max_list_cost: Money } | null;
  outcome_evaluations?: OutcomeEvaluation[];
  resources?: SessionResource[];
  created_at: string;
  archived_at: string | null;
}

export const modelOf = (agent: Pick<Agent, 'model'>): string =>
  typeof agent.model === 'string' ? agent.model : (agent.model?.id ?? '');

/** A resource mounted into the session's sandbox, as GET /v1/sessions/{id} lists it. */
export type SessionResource =
  | { id: string; type: 'file'; file_id: string; mount_path: string }
  | { id: string; type: 'github_repository'; url: string; mount_path: string }
  | {
      id?: string;
      type: 'memory_store';
      memory_store_id: string;
      name?: string | null;
      access?: 'read_write' | 'read_only' | null;
      mount_path?: string | null;
    };

export interface FileMetadata {
  id: string;
  filename: string;
  mime_type: string;
  size_bytes: number;
  created_at: string;
  downloadable?: boolean;
  scope?: { id: string; type: 'session' } | null;
}

export interface MemoryStore {
  id: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
  archived_at: string | null;
}

export interface Memory {
  type: 'memory';
  id: string;
  path: string;
  content?: string | null;
  content_sha256: string;
  content_size_bytes: number;
  memory_version_id: string;
  created_at: string;
  updated_at: string;
}

/** A directory of memories in a list with `depth=1`: pass its `path` as `path_prefix` to open it. */
export interface MemoryPrefix {
  type: 'memory_prefix';
  path: string;
}

export type Actor =
  | { type: 'session_actor'; session_id: string }
  | { type: 'api_actor'; api_key_id: string }
  | { type: 'user_actor'; user_id: string }
  | { type: 'service_account_actor'; service_account_id: string };

export interface MemoryVersion {
  id: string;
  memory_id: string;
  memory_store_id: string;
  operation: 'created' | 'modified' | 'deleted';
  path?: string | null;
  content?: string | null;
  content_size_bytes?: number | null;
  content_sha256?: string | null;
  created_at: string;
  created_by?: Actor | null;
  redacted_at?: string | null;
}
