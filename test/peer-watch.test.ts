// A brain worker killed mid-call is noticed by the brain worker following it: the survivor fails the dead worker's
// model call by id (WorkerError.Lost) and the server retries it on a live worker at once, although the call's
// heartbeat timeout is far longer than the test. The peers' endpoint opens only to the peers' token.
import http from 'node:http';
import { temporal } from '@temporalio/proto';
import { parseCodecKeys } from '../src/codec';
import { sendMessageUpdate } from '../src/session/contract';
import { PEER_STREAM_PATH, PEER_TOKEN_SCOPE } from '../src/brain/peer-liveness';
import { streamToken } from '../src/stream/token';
import type { RunningWorker } from '../src/worker';
import { spawnWorker, type ChildWorker } from './helpers/child-worker';
import { startHarness, startSession, startTestWorker, waitForEvents, type Harness } from './helpers/env';
import { TEST_CODEC_KEY } from './helpers/test-keys';

let h: Harness;
let standby: RunningWorker | undefined;
const children: ChildWorker[] = [];
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()));
  await standby?.shutdown();
  await h?.stop();
});

async function waitUntil<T>(what: string, fn: () => T | undefined | false, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** GET of the peers' endpoint: the status, and the first frame when it answers with a stream. */
function getPeers(url: string, token?: string): Promise<{ status: number; first?: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      new URL(PEER_STREAM_PATH, url),
      { headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return resolve({ status: res.statusCode ?? 0 });
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          buf += c;
          const m = /^data: (.*)\n\n/.exec(buf);
          if (m) {
            req.destroy();
            resolve({ status: 200, first: JSON.parse(m[1]) });
          }
        });
      },
    );
    req.on('error', reject);
  });
}

it('retries the model call of a killed brain worker at once on the worker following it', async () => {
  const doomed = await spawnWorker({
    TEMPORAL_ADDRESS: h.env.address,
    ANTHROPIC_BASE_URL: h.mock.url,
    ANTHROPIC_API_KEY: 'test-key',
  });
  children.push(doomed);
  // A heartbeat timeout and a first retry interval of ten minutes: the server alone would retry the call long after
  // this test gave up, and so would a failure that left the delay to the retry policy.
  const tenMinutes = 600_000;
  const handle = await startSession(h, {
    agent: {
      limits: {
        modelHeartbeatTimeoutMs: tenMinutes,
        modelRetry: { initialIntervalMs: tenMinutes, maximumIntervalMs: tenMinutes, maxAttempts: 10 },
      },
    },
  });
  h.mock.script(handle.workflowId, { steps: [{ firstByteDelayMs: 600_000 }] });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'hello' }] });
  await waitUntil('the call in flight on the doomed worker', () => h.mock.requests(handle.workflowId).length === 1);

  standby = await startTestWorker(h.env.address, h.mock.url);
  const followed = await waitUntil('the standby following the doomed worker', () =>
    standby!.status().peers?.peers.find((p) => p.activities === 1),
  );
  expect(followed.identity).toMatch(/ stream=http:\/\//);

  await doomed.kill('SIGKILL');
  const events = await waitForEvents(handle, (ev) => ev.some((e) => e.seq > seq && e.type === 'assistant_message'));
  expect(events.filter((e) => e.type === 'error')).toEqual([]);
  expect(h.mock.requests(handle.workflowId).filter((r) => r.path === '/v1/messages')).toHaveLength(2);
  expect(standby.status().peers).toMatchObject({ gone: 1, failed: 1 });

  // The retried attempt's history names why the first one ended: the peer's verdict, not a heartbeat timeout.
  const history = await handle.fetchHistory();
  const started = (history.events ?? []).filter(
    (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
  );
  const retried = started.find((e) => e.activityTaskStartedEventAttributes?.attempt === 2);
  expect(retried?.activityTaskStartedEventAttributes?.lastFailure?.applicationFailureInfo?.type).toBe(
    'WorkerError.Lost',
  );
  expect(
    Number(retried?.activityTaskStartedEventAttributes?.lastFailure?.applicationFailureInfo?.nextRetryDelay?.nanos),
  ).toBe(1_000_000);
});

it('opens the peers endpoint to the peers token only', async () => {
  standby ??= await startTestWorker(h.env.address, h.mock.url);
  const url = standby.streamUrl!;
  const key = parseCodecKeys(TEST_CODEC_KEY).current.key;
  expect((await getPeers(url)).status).toBe(401);
  // A session's stream token opens that session's stream, not the worker's activities.
  expect((await getPeers(url, streamToken(key, 'sesn_any'))).status).toBe(401);
  const ok = await getPeers(url, streamToken(key, PEER_TOKEN_SCOPE));
  expect(ok).toMatchObject({ status: 200, first: { type: 'hello', activities: [] } });
});
