// The audit trail: which key (its id and workspace) created, updated, archived or deleted what, and when. One row per
// successful mutating request, written before the response leaves, plus the operator's key commands. A row holds ids,
// the action and the resource type only: never a request body, a key, a token or any other secret.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Queryable } from '../storage/db';
import { insertAuditRow, listAuditRows } from '../storage/repos/audit-repo';
import { iso } from './shared-fields';
import type { ApiApp } from './route-context';

export const AUDIT_ACTIONS = [
  'created',
  'updated',
  'archived',
  'deleted',
  'events_sent',
  'revoked',
  'redacted',
  'paused',
  'unpaused',
  'run',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  workspaceId: string;
  /** null: the operator, on the command line. */
  apiKeyId: string | null;
  action: AuditAction;
  resourceType: string;
  resourceId: string;
  /** The resource this one lives in (a credential's vault, a resource's session). */
  parentId?: string;
  requestId?: string;
}

export interface AuditRecord {
  seq: number;
  at: string;
  workspace: string;
  workspace_id: string;
  api_key_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  parent_id: string | null;
  request_id: string | null;
}

export async function recordAudit(q: Queryable, e: AuditEntry): Promise<void> {
  await insertAuditRow(q, { ...e, parentId: e.parentId ?? null, requestId: e.requestId ?? null });
}

/** A collection segment's resource type. */
const TYPES: Record<string, string> = {
  agents: 'agent',
  environments: 'environment',
  vaults: 'vault',
  credentials: 'credential',
  sessions: 'session',
  resources: 'session_resource',
  files: 'file',
  memory_stores: 'memory_store',
  memories: 'memory',
  memory_versions: 'memory_version',
  skills: 'skill',
  versions: 'skill_version',
  work: 'work_item',
  deployments: 'deployment',
};

/**
 * What a successful request to a route pattern (`/v1/vaults/:vault_id/credentials/:credential_id/archive`) did:
 * POST to a collection creates, POST to an item updates, `/archive` archives, `/redact` redacts, DELETE deletes, and events.send sends
 * events to its session. Undefined for anything else (reads, and routes outside these resources).
 */
export function auditedAction(
  method: string,
  route: string,
  params: Record<string, string>,
  body: unknown,
): Omit<AuditEntry, 'workspaceId' | 'apiKeyId' | 'requestId'> | undefined {
  if (method !== 'POST' && method !== 'DELETE') return undefined;
  const parts = route.replace(/^\/v1\//, '').split('/');
  const ids = parts.filter((p) => p.startsWith(':')).map((p) => params[p.slice(1)]);
  if (parts[parts.length - 1] === 'events' && parts[0] === 'sessions' && method === 'POST')
    return { action: 'events_sent', resourceType: 'session', resourceId: ids[0] };
  let action: AuditAction;
  let last = parts[parts.length - 1];
  const verbs: Record<string, AuditAction> = {
    archive: 'archived',
    redact: 'redacted',
    pause: 'paused',
    unpause: 'unpaused',
    run: 'run',
  };
  if (verbs[last] && method === 'POST') {
    action = verbs[last];
    parts.pop();
    last = parts[parts.length - 1];
  } else if (method === 'DELETE') action = 'deleted';
  else action = last.startsWith(':') ? 'updated' : 'created';
  const collection = last.startsWith(':') ? parts[parts.length - 2] : last;
  const resourceType = TYPES[collection];
  if (!resourceType) return undefined;
  const idOfItem = last.startsWith(':') ? params[last.slice(1)] : undefined;
  const created = (body as { id?: unknown } | undefined)?.id;
  const resourceId = idOfItem ?? (typeof created === 'string' ? created : undefined);
  if (!resourceId) return undefined;
  const parents = idOfItem ? ids.slice(0, -1) : ids;
  return { action, resourceType, resourceId, ...(parents.length ? { parentId: parents[parents.length - 1] } : {}) };
}

function parsed(payload: unknown): unknown {
  if (typeof payload !== 'string') return undefined;
  try {
    return JSON.parse(payload);
  } catch {
    return undefined;
  }
}

/** Records every successful mutating request under /v1, before its response is sent. */
export function auditHook(app: ApiApp, db: Db, log: (m: string) => void): void {
  app.addHook('onSend', async (req: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (reply.statusCode >= 300 || !req.workspaceId || !req.routeOptions.url?.startsWith('/v1/')) return payload;
    const what = auditedAction(
      req.method,
      req.routeOptions.url,
      (req.params ?? {}) as Record<string, string>,
      parsed(payload),
    );
    if (!what) return payload;
    try {
      await recordAudit(db, {
        ...what,
        workspaceId: req.workspaceId,
        apiKeyId: req.apiKeyId ?? null,
        requestId: req.id,
      });
    } catch (e) {
      // The change is made; the response says so. The log names what went unrecorded (ids only).
      log(
        `api: audit record of ${what.action} ${what.resourceType} ${what.resourceId} (${req.id}) failed: ${(e as Error).message.split('\n')[0]}`,
      );
    }
    return payload;
  });
}

/** The newest `limit` records, in the order they happened, of one workspace (by name) or all. */
export async function listAudit(db: Queryable, opts: { workspace?: string; limit: number }): Promise<AuditRecord[]> {
  const rows = await listAuditRows(db, opts.workspace ?? null, opts.limit);
  return rows.map((r) => ({ ...r, at: iso(r.at), workspace: r.workspace ?? r.workspace_id }));
}
