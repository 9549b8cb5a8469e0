// /v1/vaults/{id}/credentials. A credential's secrets are sealed to the vault public key before they are stored:
// this process can write them but holds nothing that opens them, and no response ever carries one.
import { z } from 'zod';
import type { Queryable } from '../../storage/db';
import {
  archiveCredential,
  deleteCredential,
  findCredential,
  insertCredentialUnlessClash,
  listCredentials,
  updateCredential,
  type CredentialRow,
} from '../../storage/repos/credentials-repo';
import { sealSecret } from '../../vault/sealed';
import {
  IdSchema,
  MetadataPatchSchema,
  MetadataSchema,
  ArchivableQuerySchema,
  applyMetadataPatch,
  cursorPos,
  filterDigest,
  iso,
  isoOrNull,
  newId,
  pageSchema,
  toPage,
} from '../shared-fields';
import type { ApiApp, ApiDeps } from '../route-context';
import { refuseAtTheDoor } from '../egress-door';
import { badRequest, conflict, notFound } from '../api-error';
import { VaultPath, getVault } from './vaults';
import { recordWebhookEvent } from '../../webhooks/webhook-events';

/** A credential's webhook event, in the transaction of the change. */
const credentialEvent = (
  tx: Queryable,
  workspaceId: string,
  type: 'vault_credential.created' | 'vault_credential.archived' | 'vault_credential.deleted',
  vaultId: string,
  id: string,
) => recordWebhookEvent(tx, { workspaceId, type, data: { id, vault_id: vaultId } });

const SecretSchema = (name: string) => z.string().min(1, `${name} must not be empty`).max(16_384);
const FutureTimeSchema = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 time' })
  .refine((v) => Date.parse(v) > Date.now(), 'must be in the future');
const ServerUrlSchema = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);

const TokenEndpointAuthSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  z.strictObject({ type: z.literal('client_secret_basic'), client_secret: SecretSchema('client_secret') }),
  z.strictObject({ type: z.literal('client_secret_post'), client_secret: SecretSchema('client_secret') }),
]);
const RefreshParamsSchema = z.strictObject({
  client_id: z.string().min(1).max(1024),
  refresh_token: SecretSchema('refresh_token'),
  token_endpoint: ServerUrlSchema,
  token_endpoint_auth: TokenEndpointAuthSchema,
  resource: z.string().max(2048).nullish(),
  scope: z.string().max(2048).nullish(),
});

const EnvVarRefusal = z.looseObject({ type: z.literal('environment_variable') });

const AuthCreateSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('static_bearer'), mcp_server_url: ServerUrlSchema, token: SecretSchema('token') }),
  z.strictObject({
    type: z.literal('mcp_oauth'),
    mcp_server_url: ServerUrlSchema,
    access_token: SecretSchema('access_token'),
    expires_at: FutureTimeSchema.nullish(),
    refresh: RefreshParamsSchema.nullish(),
  }),
  EnvVarRefusal,
]);

const AuthUpdateSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('static_bearer'), token: SecretSchema('token').nullish() }),
  z.strictObject({
    type: z.literal('mcp_oauth'),
    access_token: SecretSchema('access_token').nullish(),
    expires_at: FutureTimeSchema.nullish(),
    refresh: z
      .strictObject({
        refresh_token: SecretSchema('refresh_token').nullish(),
        scope: z.string().max(2048).nullish(),
        token_endpoint_auth: z
          .discriminatedUnion('type', [
            z.strictObject({
              type: z.literal('client_secret_basic'),
              client_secret: SecretSchema('client_secret').nullish(),
            }),
            z.strictObject({
              type: z.literal('client_secret_post'),
              client_secret: SecretSchema('client_secret').nullish(),
            }),
          ])
          .optional(),
      })
      .nullish(),
  }),
  EnvVarRefusal,
]);

const RefreshResponseSchema = z.object({
  client_id: z.string(),
  token_endpoint: z.string(),
  token_endpoint_auth: z.object({ type: z.enum(['none', 'client_secret_basic', 'client_secret_post']) }),
  resource: z.string().nullable().optional(),
  scope: z.string().nullable().optional(),
});
const AuthResponseSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('static_bearer'), mcp_server_url: z.string() }),
  z.object({
    type: z.literal('mcp_oauth'),
    mcp_server_url: z.string(),
    expires_at: z.string().nullable().optional(),
    refresh: RefreshResponseSchema.nullable().optional(),
  }),
]);
type PublicAuth = z.infer<typeof AuthResponseSchema>;

export const CredentialSchema = z
  .object({
    id: z.string(),
    type: z.literal('vault_credential'),
    vault_id: z.string(),
    display_name: z.string().nullable(),
    auth: AuthResponseSchema,
    metadata: z.record(z.string(), z.string()),
    created_at: z.string(),
    updated_at: z.string(),
    archived_at: z.string().nullable(),
  })
  .meta({ id: 'VaultCredential' });
type ApiCredential = z.infer<typeof CredentialSchema>;

const toCredential = (r: CredentialRow<PublicAuth>): ApiCredential => ({
  id: r.id,
  type: 'vault_credential',
  vault_id: r.vault_id,
  display_name: r.display_name,
  auth: r.auth,
  metadata: r.metadata,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  archived_at: isoOrNull(r.archived_at),
});

async function getCredential(db: Queryable, workspaceId: string, vaultId: string, id: string): Promise<ApiCredential> {
  await getVault(db, workspaceId, vaultId);
  const row = await findCredential<PublicAuth>(db, workspaceId, vaultId, id);
  if (!row) throw notFound('credential', id);
  return toCredential(row);
}

/**
 * Why `mcp_oauth_validate` is refused: probing the MCP server needs the access token, which is sealed to VAULT_KEY,
 * and this process holds only the public half; answering `unknown` without a probe would read as a result.
 */
export const MCP_OAUTH_VALIDATE_REFUSAL =
  'mcp_oauth_validate is not supported: the probe needs the access token, which only tools workers can open (the API process holds only the vault public key); a session that uses the credential reports a failed lookup or refresh as a session.error';

const refuseEnvVar = () =>
  badRequest(
    'auth.type environment_variable is not supported yet: no secret enters a sandbox; use static_bearer or mcp_oauth',
  );

const CredentialPath = z.object({ vault_id: IdSchema, credential_id: IdSchema });

export function credentialRoutes(app: ApiApp, deps: ApiDeps): void {
  const { db, vaultPublicKey } = deps;
  app.post(
    '/v1/vaults/:vault_id/credentials',
    {
      schema: {
        operationId: 'createCredential',
        params: VaultPath,
        body: z.strictObject({
          auth: AuthCreateSchema,
          display_name: z.string().max(255).nullish(),
          metadata: MetadataSchema.optional(),
        }),
        response: { 200: CredentialSchema },
      },
    },
    async (req) => {
      const vault = await getVault(db, req.workspaceId, req.params.vault_id);
      if (vault.archived_at) throw badRequest(`vault ${vault.id} is archived; credentials cannot be added to it`);
      const a = req.body.auth;
      if (a.type === 'environment_variable') throw refuseEnvVar();
      // mcp_server_url is only the key a session's MCP server is matched by; the server's own URL meets the gate.
      if (a.type === 'mcp_oauth' && a.refresh)
        await refuseAtTheDoor(deps, 'auth.refresh.token_endpoint', a.refresh.token_endpoint);
      const id = newId('vcrd');
      const seal = (field: string, value: string) =>
        sealSecret(vaultPublicKey, { credentialId: id, vaultId: vault.id, field }, value);
      let auth: PublicAuth;
      const sealed: Record<string, string> = {};
      if (a.type === 'static_bearer') {
        auth = { type: 'static_bearer', mcp_server_url: a.mcp_server_url };
        sealed.token = await seal('token', a.token);
      } else {
        const r = a.refresh;
        auth = {
          type: 'mcp_oauth',
          mcp_server_url: a.mcp_server_url,
          expires_at: a.expires_at ? iso(a.expires_at) : null,
          refresh: r
            ? {
                client_id: r.client_id,
                token_endpoint: r.token_endpoint,
                token_endpoint_auth: { type: r.token_endpoint_auth.type },
                resource: r.resource ?? null,
                scope: r.scope ?? null,
              }
            : null,
        };
        sealed.access_token = await seal('access_token', a.access_token);
        if (r) sealed.refresh_token = await seal('refresh_token', r.refresh_token);
        if (r && r.token_endpoint_auth.type !== 'none')
          sealed.client_secret = await seal('client_secret', r.token_endpoint_auth.client_secret);
      }
      const inserted = await insertCredentialUnlessClash(
        db,
        {
          id,
          workspaceId: req.workspaceId,
          vaultId: vault.id,
          displayName: req.body.display_name ?? null,
          auth,
          sealed,
          metadata: req.body.metadata ?? {},
        },
        (tx) => credentialEvent(tx, req.workspaceId, 'vault_credential.created', vault.id, id),
      );
      if (!inserted)
        throw conflict(`auth.mcp_server_url: vault ${vault.id} already holds a credential for ${auth.mcp_server_url}`);
      return getCredential(db, req.workspaceId, vault.id, id);
    },
  );

  app.get(
    '/v1/vaults/:vault_id/credentials/:credential_id',
    { schema: { operationId: 'retrieveCredential', params: CredentialPath, response: { 200: CredentialSchema } } },
    async (req) => getCredential(db, req.workspaceId, req.params.vault_id, req.params.credential_id),
  );

  app.post(
    '/v1/vaults/:vault_id/credentials/:credential_id',
    {
      schema: {
        operationId: 'updateCredential',
        params: CredentialPath,
        body: z.strictObject({
          auth: AuthUpdateSchema.optional(),
          display_name: z.string().max(255).nullish(),
          metadata: MetadataPatchSchema.nullish(),
        }),
        response: { 200: CredentialSchema },
      },
    },
    async (req) => {
      const { vault_id: vaultId, credential_id: id } = req.params;
      const current = await getCredential(db, req.workspaceId, vaultId, id);
      if (current.archived_at) throw badRequest(`credential ${id} is archived and cannot be changed`);
      const a = req.body.auth;
      if (a?.type === 'environment_variable') throw refuseEnvVar();
      if (a && a.type !== current.auth.type)
        throw badRequest(`auth.type: credential ${id} is ${current.auth.type}; its type cannot change to ${a.type}`);
      const seal = (field: string, value: string) =>
        sealSecret(vaultPublicKey, { credentialId: id, vaultId, field }, value);
      const replaced: Record<string, string> = {};
      let auth = current.auth;
      if (a?.type === 'static_bearer' && a.token) replaced.token = await seal('token', a.token);
      if (a?.type === 'mcp_oauth' && auth.type === 'mcp_oauth') {
        if (a.access_token) replaced.access_token = await seal('access_token', a.access_token);
        if (a.expires_at !== undefined) auth = { ...auth, expires_at: a.expires_at ? iso(a.expires_at) : null };
        if (a.refresh) {
          if (!auth.refresh)
            throw badRequest(
              `auth.refresh: credential ${id} has no refresh settings to change; create a new credential with refresh`,
            );
          if (a.refresh.refresh_token) replaced.refresh_token = await seal('refresh_token', a.refresh.refresh_token);
          let refresh = { ...auth.refresh };
          if (a.refresh.scope !== undefined) refresh = { ...refresh, scope: a.refresh.scope };
          const tea = a.refresh.token_endpoint_auth;
          if (tea) {
            if (tea.type !== refresh.token_endpoint_auth.type && !tea.client_secret)
              throw badRequest('auth.refresh.token_endpoint_auth.client_secret is required when the method changes');
            refresh = { ...refresh, token_endpoint_auth: { type: tea.type } };
            if (tea.client_secret) replaced.client_secret = await seal('client_secret', tea.client_secret);
          }
          auth = { ...auth, refresh };
        }
      }
      await updateCredential(
        db,
        id,
        req.body.display_name === undefined ? current.display_name : req.body.display_name,
        auth,
        replaced,
        applyMetadataPatch(current.metadata, req.body.metadata),
      );
      return getCredential(db, req.workspaceId, vaultId, id);
    },
  );

  app.get(
    '/v1/vaults/:vault_id/credentials',
    {
      schema: {
        operationId: 'listCredentials',
        params: VaultPath,
        querystring: ArchivableQuerySchema,
        response: { 200: pageSchema(CredentialSchema) },
      },
    },
    async (req) => {
      const q = req.query;
      const vault = await getVault(db, req.workspaceId, req.params.vault_id);
      const filters = filterDigest({ include_archived: q.include_archived ?? false });
      const rows = await listCredentials<PublicAuth>(
        db,
        vault.id,
        cursorPos(q.page, filters) ?? null,
        q.include_archived ?? false,
        q.limit + 1,
      );
      return toPage(rows, q.limit, toCredential, filters);
    },
  );

  app.post(
    '/v1/vaults/:vault_id/credentials/:credential_id/archive',
    { schema: { operationId: 'archiveCredential', params: CredentialPath, response: { 200: CredentialSchema } } },
    async (req) => {
      const c = await getCredential(db, req.workspaceId, req.params.vault_id, req.params.credential_id);
      if (!c.archived_at)
        await db.transaction(async (tx) => {
          await archiveCredential(tx, c.id);
          await credentialEvent(tx, req.workspaceId, 'vault_credential.archived', c.vault_id, c.id);
        });
      return getCredential(db, req.workspaceId, c.vault_id, c.id);
    },
  );

  app.post(
    '/v1/vaults/:vault_id/credentials/:credential_id/mcp_oauth_validate',
    {
      schema: { operationId: 'validateMcpOAuthCredential', params: CredentialPath },
      config: { refused: MCP_OAUTH_VALIDATE_REFUSAL },
    },
    async (req) => {
      const c = await getCredential(db, req.workspaceId, req.params.vault_id, req.params.credential_id);
      if (c.auth.type !== 'mcp_oauth')
        throw badRequest(
          `credential ${c.id} is a ${c.auth.type} credential; only mcp_oauth credentials can be validated`,
        );
      throw badRequest(MCP_OAUTH_VALIDATE_REFUSAL);
    },
  );

  app.delete(
    '/v1/vaults/:vault_id/credentials/:credential_id',
    {
      schema: {
        operationId: 'deleteCredential',
        params: CredentialPath,
        response: { 200: z.object({ id: z.string(), type: z.literal('vault_credential_deleted') }) },
      },
    },
    async (req) => {
      const c = await getCredential(db, req.workspaceId, req.params.vault_id, req.params.credential_id);
      await db.transaction(async (tx) => {
        await deleteCredential(tx, c.id);
        await credentialEvent(tx, req.workspaceId, 'vault_credential.deleted', c.vault_id, c.id);
      });
      return { id: c.id, type: 'vault_credential_deleted' as const };
    },
  );
}
