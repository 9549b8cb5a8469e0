// Repository tokens of API sessions: given as a github_repository resource's authorization_token, kept in the
// database sealed to the vault public key, and opened here, on the hands host, with VAULT_KEY. The sandbox and the
// workflow history only ever see `resource:<id>`.
import type { Queryable } from '../storage/db';
import { openSecret } from '../vault/sealed';
import { PlatformError } from '../session/platform-error';

/** Which box holds a resource's token: the binding its seal was made with. */
export const repoTokenBinding = (resourceId: string, sessionId: string) => ({
  credentialId: resourceId,
  vaultId: sessionId,
  field: 'authorization_token',
});

export class RepoTokenError extends PlatformError {}

/** Resolves `resource:<id>` references of one session to their tokens (undefined: the resource has none). */
export type RepoTokens = (sessionId: string, ref: string) => Promise<string | undefined>;

/** `db` is asked on each use: the dev stack's embedded database opens after its workers. */
export function createRepoTokens(db: () => Queryable | undefined, vaultKey: string): RepoTokens {
  return async (sessionId, ref) => {
    const id = ref.slice('resource:'.length);
    const open = db();
    if (!open) throw new RepoTokenError('the API database is not open on this hands host yet');
    const rows = await open.query<{ sealed_token: string | null }>(
      'select sealed_token from session_resources where id = $1 and session_id = $2',
      [id, sessionId],
    );
    // A resource of another session does not open here, exactly like one that does not exist.
    if (rows.length === 0) throw new RepoTokenError(`session ${sessionId} has no resource ${id}`);
    const sealed = rows[0].sealed_token;
    return sealed ? openSecret(vaultKey, repoTokenBinding(id, sessionId), sealed) : undefined;
  };
}
