// A dependency out of reach is the server's trouble, not the request's: with Temporal unreachable, routes that
// need it answer 503 with the error envelope and retry-after, change nothing, and the rest of the API keeps serving.
import Anthropic from '@anthropic-ai/sdk';
import { startTestApi, type TestApi } from '../helpers/api';

let api: TestApi;
let client: Anthropic;

// The test API points sessions at 127.0.0.1:1, where nothing listens.
beforeAll(async () => {
  api = await startTestApi('postgres');
  client = await api.client();
});
afterAll(() => api?.stop());

it('answers 503 when Temporal is unreachable, and creates no session', async () => {
  const agent = await client.beta.agents.create({ name: 'a', model: 'claude-test' });
  const env = await client.beta.environments.create({ name: 'e' });
  const err = await client.beta.sessions
    .create({
      agent: agent.id,
      environment_id: env.id,
      initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    })
    .catch((e: unknown) => e);
  expect(err).toBeInstanceOf(Anthropic.APIError);
  const e = err as InstanceType<typeof Anthropic.APIError>;
  expect(e.status).toBe(503);
  expect(e.headers?.get('retry-after')).toBe('2');
  expect(e.error).toMatchObject({
    type: 'error',
    error: { type: 'api_error', message: 'Temporal is unreachable; nothing was changed, retry shortly' },
    request_id: expect.any(String),
  });
  // Nothing was kept, and what does not need Temporal still answers.
  expect((await client.beta.sessions.list()).data).toEqual([]);
  expect((await client.beta.agents.retrieve(agent.id)).id).toBe(agent.id);
});
