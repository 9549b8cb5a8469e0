// client.beta.vaults and their credentials: secrets are sealed to the vault public key, never returned, and open
// only with VAULT_KEY (what a tools worker holds), matched to an MCP server by URL within one workspace.
import Anthropic from '@anthropic-ai/sdk';
import { credentialForServer } from '../../src/mcp/api-credentials';
import { STORAGES, startTestApi, type TestApi } from '../helpers/api';

// The token endpoints these credentials name are on loopback: the egress gate refuses them unless opened.
process.env.EGRESS_ALLOW = '127.0.0.1:9002,127.0.0.1:9005';

const TOKEN = 'static-token-7f3a9c1e5b';
const ACCESS = 'oauth-access-2d8e4f6a0c';
const REFRESH = 'oauth-refresh-9b1d3f5e7a';
const CLIENT_SECRET = 'client-secret-4c6e8a0b2d';

describe.each(STORAGES)('vaults on %s', (storage) => {
  let api: TestApi;
  let client: Anthropic;
  beforeAll(async () => {
    api = await startTestApi(storage, ['default', 'other']);
    client = await api.client();
  });
  afterAll(async () => api?.stop());

  it('creates, updates, lists, archives and deletes vaults', async () => {
    const v = await client.beta.vaults.create({ display_name: 'Team A', metadata: { team: 'a' } });
    expect(v).toMatchObject({ type: 'vault', display_name: 'Team A', metadata: { team: 'a' }, archived_at: null });
    expect(v.id).toMatch(/^vlt_/);
    expect(
      (await client.beta.vaults.update(v.id, { display_name: 'Team A2', metadata: { team: null, x: 'y' } })).metadata,
    ).toEqual({ x: 'y' });
    expect((await client.beta.vaults.retrieve(v.id)).display_name).toBe('Team A2');
    const w = await client.beta.vaults.create({ display_name: 'second' });
    const ids = [];
    for await (const x of client.beta.vaults.list({ limit: 1 })) ids.push(x.id);
    expect(ids.slice(0, 2)).toEqual([w.id, v.id]);
    expect((await client.beta.vaults.archive(w.id)).archived_at).not.toBeNull();
    expect(await client.beta.vaults.delete(v.id)).toEqual({ id: v.id, type: 'vault_deleted' });
    await expect(client.beta.vaults.retrieve(v.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('stores static_bearer and mcp_oauth credentials without ever returning a secret', async () => {
    const v = await client.beta.vaults.create({ display_name: 'creds' });
    const bearer = await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9001/mcp', token: TOKEN },
      display_name: 'tracker',
    });
    expect(bearer).toMatchObject({
      type: 'vault_credential',
      vault_id: v.id,
      display_name: 'tracker',
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9001/mcp' },
    });
    const expires = new Date(Date.now() + 3600_000).toISOString();
    const oauth = await client.beta.vaults.credentials.create(v.id, {
      auth: {
        type: 'mcp_oauth',
        mcp_server_url: 'http://127.0.0.1:9002/mcp',
        access_token: ACCESS,
        expires_at: expires,
        refresh: {
          client_id: 'cid',
          refresh_token: REFRESH,
          token_endpoint: 'http://127.0.0.1:9002/token',
          token_endpoint_auth: { type: 'client_secret_post', client_secret: CLIENT_SECRET },
          scope: 'read',
        },
      },
    });
    expect(oauth.auth).toEqual({
      type: 'mcp_oauth',
      mcp_server_url: 'http://127.0.0.1:9002/mcp',
      expires_at: expires,
      refresh: {
        client_id: 'cid',
        token_endpoint: 'http://127.0.0.1:9002/token',
        token_endpoint_auth: { type: 'client_secret_post' },
        resource: null,
        scope: 'read',
      },
    });
    const seen = JSON.stringify([
      bearer,
      oauth,
      await client.beta.vaults.credentials.retrieve(oauth.id, { vault_id: v.id }),
      (await client.beta.vaults.credentials.list(v.id)).data,
    ]);
    for (const secret of [TOKEN, ACCESS, REFRESH, CLIENT_SECRET]) expect(seen).not.toContain(secret);
    const updated = await client.beta.vaults.credentials.update(oauth.id, {
      vault_id: v.id,
      auth: { type: 'mcp_oauth', refresh: { scope: 'write' } },
      metadata: { k: 'v' },
    });
    expect(updated.auth).toMatchObject({ refresh: { scope: 'write' } });
    expect(updated.metadata).toEqual({ k: 'v' });
  });

  it('refuses a second credential for one server, a type change and environment_variable', async () => {
    const v = await client.beta.vaults.create({ display_name: 'rules' });
    const c = await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9003/mcp', token: TOKEN },
    });
    await expect(
      client.beta.vaults.credentials.create(v.id, {
        auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9003/mcp', token: 'x' },
      }),
    ).rejects.toBeInstanceOf(Anthropic.ConflictError);
    await expect(
      client.beta.vaults.credentials.update(c.id, { vault_id: v.id, auth: { type: 'mcp_oauth', access_token: 'x' } }),
    ).rejects.toThrow(/cannot change/);
    await expect(
      client.beta.vaults.credentials.create(v.id, {
        auth: {
          type: 'environment_variable',
          secret_name: 'X',
          secret_value: 'y',
          networking: { type: 'unrestricted' },
        },
      }),
    ).rejects.toThrow(/environment_variable is not supported yet/);
    await expect(
      client.beta.vaults.credentials.create(v.id, {
        auth: { type: 'static_bearer', mcp_server_url: 'not a url', token: 'x' },
      }),
    ).rejects.toThrow(/auth\.mcp_server_url/);
    expect((await client.beta.vaults.credentials.archive(c.id, { vault_id: v.id })).archived_at).not.toBeNull();
    expect(await client.beta.vaults.credentials.delete(c.id, { vault_id: v.id })).toEqual({
      id: c.id,
      type: 'vault_credential_deleted',
    });
  });

  it('keeps vaults of one workspace out of reach of another', async () => {
    const other = await api.client('other');
    const v = await client.beta.vaults.create({ display_name: 'mine' });
    const c = await client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9004/mcp', token: TOKEN },
    });
    await expect(other.beta.vaults.retrieve(v.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(other.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id })).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    await expect(
      other.beta.vaults.credentials.create(v.id, {
        auth: { type: 'static_bearer', mcp_server_url: 'http://x/mcp', token: 'y' },
      }),
    ).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(other.beta.vaults.delete(v.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    expect((await other.beta.vaults.list()).data.map((x) => x.id)).not.toContain(v.id);
    expect((await client.beta.vaults.retrieve(v.id)).id).toBe(v.id);
  });

  if (storage === 'postgres') {
    it('holds only sealed boxes at rest, which VAULT_KEY opens for the matching server and workspace', async () => {
      const db = api.db!;
      const v = await client.beta.vaults.create({ display_name: 'sealed' });
      const c = await client.beta.vaults.credentials.create(v.id, {
        auth: {
          type: 'mcp_oauth',
          mcp_server_url: 'http://127.0.0.1:9005/mcp',
          access_token: ACCESS,
          refresh: {
            client_id: 'cid',
            refresh_token: REFRESH,
            token_endpoint: 'http://127.0.0.1:9005/token',
            token_endpoint_auth: { type: 'client_secret_post', client_secret: CLIENT_SECRET },
          },
        },
      });
      const dump = JSON.stringify(await db.query('select * from credentials'));
      for (const secret of [ACCESS, REFRESH, CLIENT_SECRET, Buffer.from(ACCESS).toString('base64')])
        expect(dump).not.toContain(secret);
      const [{ workspace_id: workspaceId }] = await db.query<{ workspace_id: string }>(
        'select workspace_id from credentials where id = $1',
        [c.id],
      );
      expect(await credentialForServer(db, api.vaultKey, workspaceId, [v.id], 'http://127.0.0.1:9005/mcp')).toEqual({
        access_token: ACCESS,
        refresh_token: REFRESH,
        token_url: 'http://127.0.0.1:9005/token',
        client_id: 'cid',
        client_secret: CLIENT_SECRET,
        token_endpoint_auth: 'client_secret_post',
      });
      expect(
        await credentialForServer(db, api.vaultKey, workspaceId, [v.id], 'http://127.0.0.1:9999/mcp'),
      ).toBeUndefined();
      expect(
        await credentialForServer(db, api.vaultKey, 'wrkspc_elsewhere', [v.id], 'http://127.0.0.1:9005/mcp'),
      ).toBeUndefined();
      await expect(
        credentialForServer(
          db,
          Buffer.alloc(32, 7).toString('base64'),
          workspaceId,
          [v.id],
          'http://127.0.0.1:9005/mcp',
        ),
      ).rejects.toThrow(/does not open/);
      // A box moved onto another credential's row does not open there.
      const d = await client.beta.vaults.credentials.create(v.id, {
        auth: { type: 'static_bearer', mcp_server_url: 'http://127.0.0.1:9006/mcp', token: TOKEN },
      });
      await db.query(
        `update credentials set sealed = jsonb_build_object('token', (select sealed->>'access_token' from credentials where id = $1)) where id = $2`,
        [c.id, d.id],
      );
      await expect(
        credentialForServer(db, api.vaultKey, workspaceId, [v.id], 'http://127.0.0.1:9006/mcp'),
      ).rejects.toThrow(/another credential/);
    });
  }
});
