// The audit_log table: ids, the action and the resource type of each change, never a body or a secret.
import type { Queryable } from '../db';

export interface NewAuditRow {
  workspaceId: string;
  apiKeyId: string | null;
  action: string;
  resourceType: string;
  resourceId: string;
  parentId: string | null;
  requestId: string | null;
}

/** Appends one record; run it in the transaction of the change it records, when there is one. */
export async function insertAuditRow(q: Queryable, e: NewAuditRow): Promise<void> {
  await q.query(
    'insert into audit_log (workspace_id, api_key_id, action, resource_type, resource_id, parent_id, request_id) values ($1, $2, $3, $4, $5, $6, $7)',
    [e.workspaceId, e.apiKeyId, e.action, e.resourceType, e.resourceId, e.parentId, e.requestId],
  );
}

export interface AuditRow {
  seq: number;
  at: Date;
  /** The workspace's name; null when the workspace is gone. */
  workspace: string | null;
  workspace_id: string;
  api_key_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  parent_id: string | null;
  request_id: string | null;
}

/** The newest `limit` records, in the order they happened, of one workspace (by name; null: all). */
export async function listAuditRows(db: Queryable, workspace: string | null, limit: number): Promise<AuditRow[]> {
  return db.query<AuditRow>(
    `select * from (
       select a.seq, a.at, w.name as workspace, a.workspace_id, a.api_key_id, a.action, a.resource_type, a.resource_id, a.parent_id, a.request_id
         from audit_log a left join workspaces w on w.id = a.workspace_id
        where ($1::text is null or w.name = $1) order by a.seq desc limit $2
     ) newest order by seq`,
    [workspace, limit],
  );
}
