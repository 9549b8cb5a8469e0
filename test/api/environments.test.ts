// client.beta.environments against the API server: cloud configs mapped onto the sandbox recipe's network, and
// what the platform cannot honour yet refused with a 400 that says so.
import Anthropic from '@anthropic-ai/sdk';
import { recipeNetwork } from '../../src/api/environments';
import { STORAGES, startTestApi, type TestApi } from '../helpers/api';

const messageOf = (e: unknown) =>
  ((e as InstanceType<typeof Anthropic.APIError>).error as { error: { message: string } }).error.message;

describe.each(STORAGES)('environments on %s', (storage) => {
  let api: TestApi;
  let client: Anthropic;
  beforeAll(async () => {
    api = await startTestApi(storage);
    client = await api.client();
  });
  afterAll(async () => api?.stop());

  it('creates a cloud environment with no network by default, resolved in full', async () => {
    const env = await client.beta.environments.create({ name: 'plain' });
    expect(env).toMatchObject({
      type: 'environment',
      name: 'plain',
      description: null,
      config: {
        type: 'cloud',
        networking: { type: 'limited', allowed_hosts: [], allow_mcp_servers: false, allow_package_managers: false },
        packages: { apt: [], pip: [], npm: [], cargo: [], gem: [], go: [] },
      },
      archived_at: null,
    });
    expect(env.id).toMatch(/^env_/);
    expect(recipeNetwork(env.config as Parameters<typeof recipeNetwork>[0])).toBe('none');
  });

  it('maps unrestricted networking to the bridge network, and keeps omitted fields on update', async () => {
    const env = await client.beta.environments.create({
      name: 'open',
      config: { type: 'cloud', networking: { type: 'unrestricted' } },
      metadata: { a: '1', b: '2' },
    });
    expect(recipeNetwork(env.config as Parameters<typeof recipeNetwork>[0])).toBe('bridge');
    const updated = await client.beta.environments.update(env.id, {
      description: 'd',
      metadata: { a: null, b: '', c: '3' },
      config: { type: 'cloud' },
    });
    expect(updated.config).toMatchObject({ networking: { type: 'unrestricted' } });
    expect(updated.metadata).toEqual({ c: '3' });
    expect(updated.description).toBe('d');
    expect((await client.beta.environments.retrieve(env.id)).description).toBe('d');
  });

  it.each([
    [
      { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['pypi.org'] } },
      /allowed_hosts is not supported yet/,
    ],
    [
      { type: 'cloud', networking: { type: 'limited', allow_package_managers: true } },
      /allow_package_managers is not supported yet/,
    ],
    [{ type: 'cloud', packages: { pip: ['pandas==2.2.0'] } }, /packages\.pip is not supported yet/],
    [{ type: 'cloud', networking: { type: 'open' } }, /networking/],
  ])('refuses config %j with a 400 that says why', async (config, message) => {
    const err = await client.beta.environments
      .create({ name: `refused-${Math.random()}`, config: config as Anthropic.Beta.BetaCloudConfigParams })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(messageOf(err)).toMatch(message);
  });

  it('keeps names unique in a workspace: a duplicate is a 409', async () => {
    await client.beta.environments.create({ name: 'unique' });
    const err = await client.beta.environments.create({ name: 'unique' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.ConflictError);
    expect((err as InstanceType<typeof Anthropic.ConflictError>).headers.get('x-should-retry')).toBe('false');
  });

  it('lists with cursors, archives (then refuses updates) and deletes', async () => {
    const a = await client.beta.environments.create({ name: 'to-archive' });
    const b = await client.beta.environments.create({ name: 'to-delete' });
    const archived = await client.beta.environments.archive(a.id);
    expect(archived.archived_at).not.toBeNull();
    const err = await client.beta.environments.update(a.id, { description: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect((err as InstanceType<typeof Anthropic.BadRequestError>).errorCode).toBe('environment_archived');
    const listed = [];
    for await (const e of client.beta.environments.list({ limit: 1 })) listed.push(e.id);
    expect(listed).toContain(b.id);
    expect(listed).not.toContain(a.id);
    const withArchived = [];
    for await (const e of client.beta.environments.list({ include_archived: true })) withArchived.push(e.id);
    expect(withArchived).toContain(a.id);
    expect(await client.beta.environments.delete(b.id)).toEqual({ id: b.id, type: 'environment_deleted' });
    await expect(client.beta.environments.retrieve(b.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});
