// The cluster test at length (test/helpers/cluster.ts): four hosts, three sessions at once, and two hosts killed in
// turn mid-turn; each session's log stays gap-free with every call answered once, and every host reads all of it
// after Temporal forgets the early runs, with nothing on any host's disk.
import fs from 'node:fs';
import { sendMessageUpdate } from '../src/session/contract';
import type { SessionEvent } from '../src/session/events';
import { callsAnsweredOnce, readLogStep, requestsSeen, startCluster, type Cluster } from './helpers/cluster';
import { expectGapFreeAndValid, startSession, turnDone } from './helpers/env';

let c: Cluster;
beforeAll(async () => {
  c = await startCluster(4);
});
afterAll(() => c?.stop());

it('keeps three sessions whole across two hosts killed one after the other', async () => {
  const first = await c.brainOn(0);
  const sessions = await Promise.all(
    [0, 1, 2].map(async () => {
      const handle = await startSession(c.h, {
        agent: { tools: ['session_events'], sandboxes: {}, limits: { historyEvents: 100 } },
      });
      const id = handle.workflowId;
      const steps = [
        ...Array.from({ length: 20 }, () => readLogStep),
        { gate: `${id}-1`, ...readLogStep },
        ...Array.from({ length: 20 }, () => readLogStep),
        { gate: `${id}-2`, ...readLogStep },
      ];
      c.h.mock.script(id, {
        steps: [
          ...steps,
          ...Array.from({ length: 10 }, () => readLogStep),
          { reply: { content: [{ type: 'text', text: 'done' }] } },
        ],
      });
      const { seq } = await handle.executeUpdate(sendMessageUpdate, {
        args: [{ text: 'read the log again and again' }],
      });
      return { id, seq };
    }),
  );
  // Host 0 dies with every session in its first gated call; host 1 takes over and dies in the second; host 2 ends.
  for (const s of sessions) await requestsSeen(c, s.id, 21, () => first.stderr().slice(-2000));
  await first.kill('SIGKILL');
  const second = await c.brainOn(1);
  for (const s of sessions) c.h.mock.release(`${s.id}-1`);
  // The dead call's retry took the next step, so the second gate is request 42 at the latest.
  for (const s of sessions) await requestsSeen(c, s.id, 42, () => second.stderr().slice(-2000));
  await second.kill('SIGKILL');
  await c.brainOn(2);
  for (const s of sessions) c.h.mock.release(`${s.id}-2`);

  for (const s of sessions) {
    let events: SessionEvent[] = [];
    for (
      const deadline = Date.now() + 240_000;
      !turnDone(s.seq)(events);
      await new Promise((r) => setTimeout(r, 500))
    ) {
      if (Date.now() > deadline)
        throw new Error(`session ${s.id} did not finish; last event ${JSON.stringify(events.at(-1))}`);
      events = await c.eventsOn(3, s.id);
    }
    expectGapFreeAndValid(events);
    const { uses, results } = callsAnsweredOnce(events);
    expect(results).toEqual(uses);
    expect(new Set(uses).size).toBe(uses.length);
    expect(await c.forgetEarlyRuns(s.id)).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < c.hosts.length; i++) expect(await c.eventsOn(i, s.id)).toEqual(events);
  }
  for (const host of c.hosts) expect(fs.readdirSync(host, { recursive: true })).toEqual([]);
});
