// Two hosts of one cluster (test/helpers/cluster.ts): host A dies (SIGKILL) mid-turn, after its session has handed
// over into the PostgreSQL archive; host B carries the turn to its end; a client on a third host reads every event,
// including those of runs deleted from Temporal, and no host keeps anything of the session on its disk.
import fs from 'node:fs';
import { sendMessageUpdate } from '../src/session/contract';
import type { SessionEvent } from '../src/session/events';
import { callsAnsweredOnce, readLogStep, requestsSeen, startCluster, type Cluster } from './helpers/cluster';
import { expectGapFreeAndValid, runsOf, startSession, turnDone } from './helpers/env';

let c: Cluster;
beforeAll(async () => {
  c = await startCluster(3);
});
afterAll(() => c?.stop());

it('carries a session across a host killed mid-turn, every event readable from a third host after Temporal forgets its first runs', async () => {
  const a = await c.brainOn(0);
  const handle = await startSession(c.h, {
    agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
  });
  const id = handle.workflowId;
  const gate = `cluster-${id}`;
  c.h.mock.script(id, {
    steps: [
      ...Array.from({ length: 24 }, () => readLogStep),
      { gate, ...readLogStep },
      ...Array.from({ length: 6 }, () => readLogStep),
      { reply: { content: [{ type: 'text', text: 'done' }] } },
    ],
  });
  const { seq } = await handle.executeUpdate(sendMessageUpdate, { args: [{ text: 'read the log again and again' }] });

  // Host A is in the gated model call (the 25th) after handing over at least once; then it dies.
  await requestsSeen(c, id, 25, () => a.stderr().slice(-2000));
  expect((await runsOf(c.h.env.client, id)).length).toBeGreaterThanOrEqual(2);
  await a.kill('SIGKILL');

  // Host B starts after the death and takes the retried call and the rest of the turn.
  await c.brainOn(1);
  c.h.mock.release(gate);
  let events: SessionEvent[] = [];
  for (const deadline = Date.now() + 180_000; !turnDone(seq)(events); await new Promise((r) => setTimeout(r, 300))) {
    if (Date.now() > deadline)
      throw new Error(`host B did not finish the turn; last event ${JSON.stringify(events.at(-1))}`);
    events = await c.eventsOn(2, id);
  }
  expectGapFreeAndValid(events);
  // Every call the model made was answered once, across the death (the dead host's call was retried on host B).
  const { uses, results } = callsAnsweredOnce(events);
  expect(uses.length).toBeGreaterThanOrEqual(25);
  expect(results).toEqual(uses);
  expect(new Set(uses).size).toBe(uses.length);

  // Temporal forgets every run but the last; the archive alone holds their events, and every host reads them.
  expect(await c.forgetEarlyRuns(id)).toBeGreaterThanOrEqual(2);
  for (let i = 0; i < c.hosts.length; i++) expect(await c.eventsOn(i, id)).toEqual(events);

  // No host keeps a segment, a vault entry, a database or a key on its disk.
  for (const host of c.hosts) expect(fs.readdirSync(host, { recursive: true })).toEqual([]);
});
