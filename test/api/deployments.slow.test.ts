// A deployment with a per-minute schedule, fast-forwarded the way Temporal allows (a backfill of its Schedule over
// the past minutes) and then left to fire by itself: each firing creates a session whose deployment_id is set and
// whose initial events were sent, the runs record them (once per scheduled time, however often the range is
// backfilled), and paused it creates none. Checked only through the SDK; Temporal is reached for the backfill alone.
// With RECORD_HISTORIES=1 it saves one firing's history as a replay fixture (test/histories/deployment-run.json).
import Anthropic from '@anthropic-ai/sdk';
import fs from 'node:fs';
import path from 'node:path';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { RunningWorker } from '../../src/worker';
import { scheduleIdOf } from '../../src/api/deployment-schedules';
import { startApiOn, type TestApi } from '../helpers/api';
import { startHarness, startTestWorker, type Harness } from '../helpers/env';

type Run = Anthropic.Beta.BetaManagedAgentsDeploymentRun;

let h: Harness;
let api: TestApi;
let tools: RunningWorker;
let client: Anthropic;

beforeAll(async () => {
  h = await startHarness();
  api = await startApiOn(h);
  tools = await startTestWorker(h.env.address, h.mock.url, {
    role: 'tools',
    vaultKey: api.vaultKey,
    apiDb: () => api.db,
  });
  client = await api.client();
});
afterAll(async () => {
  await tools?.shutdown().catch(() => undefined);
  await api?.stop();
  await h?.stop();
});

const MINUTE = 60_000;

async function scheduledRuns(deploymentId: string): Promise<Run[]> {
  const runs: Run[] = [];
  for await (const r of client.beta.deploymentRuns.list({ deployment_id: deploymentId, trigger_type: 'schedule' }))
    runs.push(r);
  return runs.sort((a, b) => a.created_at.localeCompare(b.created_at));
}

async function runsUntil(deploymentId: string, n: number, timeoutMs: number): Promise<Run[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await scheduledRuns(deploymentId);
    if (runs.length >= n || Date.now() > deadline) return runs;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function userTexts(sessionId: string): Promise<string[]> {
  for (let i = 0; i < 100; i++) {
    const texts: string[] = [];
    for await (const e of client.beta.sessions.events.list(sessionId))
      if (e.type === 'user.message') texts.push(...e.content.map((b) => (b.type === 'text' ? b.text : '')));
    if (texts.length > 0) return texts;
    await new Promise((r) => setTimeout(r, 100));
  }
  return [];
}

// Waits on the clock: a backfill, then past a minute's turn paused, then up to two minutes for the next firing.
it(
  'fires a per-minute schedule: backfilled and by itself, once per minute, and not while paused',
  async () => {
    const envId = (await client.beta.environments.create({ name: 'minutely-env' })).id;
    const agentId = (await client.beta.agents.create({ name: 'minutely', model: 'claude-haiku-4-5' })).id;
    const d = await client.beta.deployments.create({
      agent: agentId,
      environment_id: envId,
      name: 'every minute',
      initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'check the queue' }] }],
      schedule: { type: 'cron', expression: '* * * * *', timezone: 'UTC' },
    });
    // Paused at once, so the minutes below are the backfill's alone.
    await client.beta.deployments.pause(d.id);
    const schedule = h.env.client.schedule.getHandle(scheduleIdOf(d.id));
    const top = Math.floor(Date.now() / MINUTE) * MINUTE;
    const minutes = [3, 2, 1].map((m) => new Date(top - m * MINUTE).toISOString());
    const range = { start: new Date(top - 3 * MINUTE - 30_000), end: new Date(top - 30_000) };
    await schedule.backfill([{ ...range, overlap: ScheduleOverlapPolicy.ALLOW_ALL }]);

    let runs = await runsUntil(d.id, 3, 60_000);
    // The backfill's three firings run side by side: their runs are recorded in whatever order they start.
    const byMinute = (rs: Run[]) =>
      rs
        .map((r) => r.trigger_context as { type: string; scheduled_at: string })
        .sort((a, b) => (a.scheduled_at < b.scheduled_at ? -1 : 1));
    expect(byMinute(runs)).toEqual(minutes.map((m) => ({ type: 'schedule', scheduled_at: m })));
    for (const r of runs) {
      expect(r.error).toBeNull();
      const s = await client.beta.sessions.retrieve(r.session_id!);
      expect(s.deployment_id).toBe(d.id);
      expect(await userTexts(s.id)).toEqual(['check the queue']);
    }
    const sessions = [];
    for await (const s of client.beta.sessions.list({ deployment_id: d.id })) sessions.push(s.id);
    expect(sessions.sort()).toEqual(runs.map((r) => r.session_id).sort());
    const latest = runs.map((r) => r.created_at).sort()[runs.length - 1];
    expect((await client.beta.deployments.retrieve(d.id)).schedule?.last_run_at).toBe(latest);

    if (process.env.RECORD_HISTORIES === '1') {
      const file = path.join(__dirname, '../histories/deployment-run.json');
      const first = (await schedule.describe()).info.recentActions[0].action.workflow.workflowId;
      const history = await h.env.client.workflow.getHandle(first).fetchHistory();
      if (!fs.existsSync(file)) fs.writeFileSync(file, historyToJSON(history));
    }

    // The same minutes again: each scheduled time is recorded once.
    await schedule.backfill([{ ...range, overlap: ScheduleOverlapPolicy.ALLOW_ALL }]);
    await new Promise((r) => setTimeout(r, 5_000));
    expect((await scheduledRuns(d.id)).map((r) => r.id)).toEqual(runs.map((r) => r.id));

    // Paused past a minute's turn: nothing fires.
    const nextTop = Math.ceil(Date.now() / MINUTE) * MINUTE;
    await new Promise((r) => setTimeout(r, nextTop - Date.now() + 10_000));
    expect(await scheduledRuns(d.id)).toHaveLength(3);

    // Unpaused, it fires by itself at the next minute.
    await client.beta.deployments.unpause(d.id);
    runs = await runsUntil(d.id, 4, 2 * MINUTE);
    expect(runs).toHaveLength(4);
    expect(runs[3].session_id).not.toBeNull();
    expect(new Date((runs[3].trigger_context as { scheduled_at: string }).scheduled_at).getTime() % MINUTE).toBe(0);
    await client.beta.deployments.archive(d.id);
  },
  8 * MINUTE,
);
