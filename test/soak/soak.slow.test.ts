// A bounded soak for `npm run test:slow`: six sessions for four minutes of input with a fixed seed, brain
// SIGKILLs and one dev server restart. Any lost, doubled or misplaced message, gap, doubled tool result,
// failed workflow task, stuck session or refused model request fails it, listed with its session and seq.
import { formatSoak, runSoak } from './soak';

it(
  'loses, doubles and breaks nothing while input races tool loops, handovers, brain kills and a server restart',
  async () => {
    const result = await runSoak({
      sessions: 6,
      minutes: 4,
      seed: 14,
      killEverySeconds: 45,
      restarts: 1,
      log: () => undefined,
    });
    if (result.violations.length) process.stderr.write(formatSoak(result));
    expect(result.figures.handovers).toBeGreaterThan(0);
    expect(result.figures.kills).toBeGreaterThan(0);
    expect(result.figures.messagesAccepted).toBeGreaterThan(0);
    expect(result.violations).toEqual([]);
  },
  20 * 60_000,
);
