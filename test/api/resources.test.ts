// A github_repository resource through client.beta.sessions: a private repository over authenticated HTTP, cloned
// into the session's sandbox by the hands host, pushed to and pulled from with git_push and git_pull, its token
// sealed in the database and rotated through resources.update, and never in an event, a response or the sandbox.
import Anthropic from '@anthropic-ai/sdk';
import crypto from 'node:crypto';
import { createRepoTokens } from '../../src/hands/repo-tokens';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, type Harness } from '../helpers/env';
import { startGitServer, type GitServer } from '../helpers/git-server';

const TOKEN = `ghp_${crypto.randomBytes(12).toString('hex')}`;
const ROTATED = `ghp_${crypto.randomBytes(12).toString('hex')}`;
let h: Harness;
let api: TestApi;
let git: GitServer;
let client: Anthropic;
let repoUrl: string;
let agentId: string;
let envId: string;

beforeAll(async () => {
  git = await startGitServer([TOKEN]);
  repoUrl = git.createRepo('app.git', { 'README.md': '# app\n', 'src/main.txt': 'v1\n' });
  // The git server is the one loopback server tenants may reach.
  process.env.EGRESS_ALLOW = new URL(repoUrl).host;
  // The hands host opens the tokens the API sealed, with the private half only it (and this test) holds.
  h = await startHarness({
    role: 'all',
    hostId: `api-res-${process.pid}`,
    repoTokens: (s, r) => createRepoTokens(() => api.db, api.vaultKey)(s, r),
  });
  api = await startApiOn(h, ['default', 'other']);
  client = await api.client();
  agentId = (
    await client.beta.agents.create({
      name: 'coder',
      model: 'claude-test',
      tools: [{ type: 'agent_toolset_20260401' }],
    })
  ).id;
  envId = (await client.beta.environments.create({ name: 'env' })).id;
});
afterAll(async () => {
  await api?.stop();
  await h?.stop();
  await git?.stop();
});

type Event = Anthropic.Beta.Sessions.BetaManagedAgentsSessionEvent;
async function eventsUntil(id: string, done: (events: Event[]) => boolean): Promise<Event[]> {
  for (let i = 0; i < 900; i++) {
    const events: Event[] = [];
    for await (const e of client.beta.sessions.events.list(id)) events.push(e);
    if (done(events)) return events;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`session ${id} did not get there`);
}
const idles = (n: number) => (events: Event[]) => events.filter((e) => e.type === 'session.status_idle').length >= n;
const tool = (name: string, input: Record<string, unknown>) => ({
  reply: { content: [{ type: 'tool_use' as const, name, input }] },
});
const done = { reply: { content: [{ type: 'text' as const, text: 'done' }] } };
const results = (events: Event[]) =>
  events
    .filter((e) => e.type === 'agent.tool_result')
    .map((e) => ((e as { content: { text: string }[] }).content ?? []).map((b) => b.text).join(''));
const say = (id: string, text: string) =>
  client.beta.sessions.events.send(id, { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });
const upstreamLog = () => git.git('app.git', 'log', '--format=%s', 'main').trim().split('\n');

it('clones the repository at its mount path, pushes and pulls through the hands host, and rotates the token', async () => {
  const s = await client.beta.sessions.create({
    agent: agentId,
    environment_id: envId,
    resources: [
      {
        type: 'github_repository',
        url: repoUrl,
        authorization_token: TOKEN,
        checkout: { type: 'branch', name: 'main' },
      },
    ],
  });
  expect(s.resources).toEqual([
    {
      id: expect.stringMatching(/^sesrsc_/),
      type: 'github_repository',
      url: repoUrl,
      mount_path: '/workspace/app',
      checkout: { type: 'branch', name: 'main' },
      created_at: expect.any(String),
      updated_at: expect.any(String),
    },
  ]);
  const resourceId = (s.resources[0] as Anthropic.Beta.Sessions.BetaManagedAgentsGitHubRepositoryResource).id;
  expect(JSON.stringify(s)).not.toContain(TOKEN);

  h.mock.script(s.id, {
    steps: [
      // No token anywhere the sandbox can read: not in the environment, git's config or any file.
      tool('bash', {
        command:
          'p=ghp; cd app && cat README.md && git log --format=%s && git remote get-url origin; env | grep -c "${p}_"; git config --list | grep -ci token; grep -rl "${p}_" /workspace /tmp /home 2>/dev/null; echo end',
      }),
      // The shell persists: it is still in app.
      tool('bash', {
        command:
          'echo v2 > src/main.txt && git -c user.name=agent -c user.email=agent@example.com commit -qam "agent change" && echo committed',
      }),
      tool('git_push', {}),
      done,
    ],
  });
  await say(s.id, 'change it');
  const first = await eventsUntil(s.id, idles(1));
  const [cloned, committed, pushed] = results(first);
  expect(cloned).toBe(`# app\ninitial\n${repoUrl}\n0\n0\nend\n[exit 0]`);
  expect(committed).toBe('committed\n[exit 0]');
  expect(pushed).toMatch(/^pushed main \([0-9a-f]{12}\) to http:\/\/127\.0\.0\.1:\d+\/app\.git/);
  expect(upstreamLog()).toEqual(['agent change', 'initial']);

  // Someone pushes upstream, and the old token stops working: the rotated one is what the next pull uses.
  git.commitUpstream('app.git', { 'NEWS.md': 'from upstream\n' }, 'upstream change');
  git.tokens.delete(TOKEN);
  git.tokens.add(ROTATED);
  const rotated = await client.beta.sessions.resources.update(resourceId, {
    session_id: s.id,
    authorization_token: ROTATED,
  });
  expect(rotated).toMatchObject({ id: resourceId, url: repoUrl, mount_path: '/workspace/app' });
  expect(JSON.stringify(rotated)).not.toContain(ROTATED);

  h.mock.script(s.id, { steps: [tool('git_pull', {}), tool('bash', { command: 'cat NEWS.md' }), done] });
  await say(s.id, 'pull');
  const second = await eventsUntil(s.id, idles(2));
  const [, , , pulled, news] = results(second);
  expect(pulled).toMatch(/Fast-forward|NEWS\.md/);
  expect(news).toBe('from upstream\n[exit 0]');
  expect(
    git.seen.some(
      (line) => line.includes(Buffer.from(`x-access-token:${ROTATED}`).toString('base64')) || line.includes(ROTATED),
    ),
  ).toBe(true);

  const all = JSON.stringify(second);
  for (const secret of [TOKEN, ROTATED]) expect(all).not.toContain(secret);
  const history = JSON.stringify(await h.env.client.workflow.getHandle(s.id).fetchHistory());
  for (const secret of [TOKEN, ROTATED]) expect(history).not.toContain(secret);

  const listed = [];
  for await (const r of client.beta.sessions.resources.list(s.id)) listed.push(r);
  expect(listed.map((r) => (r as Anthropic.Beta.Sessions.BetaManagedAgentsGitHubRepositoryResource).id)).toEqual([
    resourceId,
  ]);
  expect(await client.beta.sessions.resources.retrieve(resourceId, { session_id: s.id })).toMatchObject({
    id: resourceId,
    type: 'github_repository',
  });
  // Another workspace sees neither the session nor its resource.
  const stranger = await api.client('other');
  await expect(stranger.beta.sessions.resources.retrieve(resourceId, { session_id: s.id })).rejects.toMatchObject({
    status: 404,
  });
  await expect(
    stranger.beta.sessions.resources.update(resourceId, { session_id: s.id, authorization_token: 'ghp_mine' }),
  ).rejects.toMatchObject({ status: 404 });
  await client.beta.sessions.archive(s.id);
});

it('checks out a commit at /workspace', async () => {
  const initial = git.git('app.git', 'rev-list', '--max-parents=0', 'main').trim();
  git.tokens.add(TOKEN);
  const s = await client.beta.sessions.create({
    agent: agentId,
    environment_id: envId,
    resources: [
      {
        type: 'github_repository',
        url: repoUrl,
        authorization_token: TOKEN,
        checkout: { type: 'commit', sha: initial },
        mount_path: '/workspace',
      },
    ],
  });
  expect(s.resources[0]).toMatchObject({ mount_path: '/workspace', checkout: { type: 'commit', sha: initial } });
  h.mock.script(s.id, { steps: [tool('bash', { command: 'git rev-parse HEAD && cat src/main.txt' }), done] });
  await say(s.id, 'where are we');
  const [head] = results(await eventsUntil(s.id, idles(1)));
  expect(head).toBe(`${initial}\nv1\n[exit 0]`);
  await client.beta.sessions.archive(s.id);
});

it('refuses resources it cannot mount, naming the field, and creates nothing', async () => {
  const before = (await client.beta.sessions.list()).data.length;
  const repo = { type: 'github_repository' as const, url: repoUrl };
  const refused: [unknown[], RegExp][] = [
    [[repo, repo], /resources: a session mounts at most one repository for now/],
    [[{ type: 'file', file_id: 'file_1', mount_path: '/etc/x' }], /resources\.0\.mount_path: a file mounts at/],
    [[{ ...repo, mount_path: '/etc' }], /resources\.0\.mount_path: a repository mounts at \/workspace/],
    [[{ ...repo, mount_path: '/workspace/../etc' }], /resources\.0\.mount_path/],
    [[{ ...repo, url: `http://user:${TOKEN}@127.0.0.1/app.git` }], /resources\.0\.url: url must not carry credentials/],
    [[{ ...repo, checkout: { type: 'commit', sha: 'abc' } }], /resources\.0\.checkout\.sha/],
    [[{ ...repo, checkout: { type: 'branch', name: '-x' } }], /resources\.0\.checkout\.name/],
  ];
  for (const [resources, message] of refused) {
    const err = await client.beta.sessions
      .create({ agent: agentId, environment_id: envId, resources: resources as never })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400 });
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toContain(TOKEN);
  }
  expect((await client.beta.sessions.list()).data.length).toBe(before);
});
