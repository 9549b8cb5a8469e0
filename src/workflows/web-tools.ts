// web_fetch for a session whose agent offers it: the call's input parsed here, the page fetched on the tools
// queue (src/egress/page-fetch.ts) through the egress gate.
import { isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Agent } from '../session/agent';
import type { WebActivities } from '../egress/page-fetch';
import { TOOLS_TASK_QUEUE } from '../session/queues';
import { failureMessage } from './failures';
import { invalidInput, toolError, type ToolOutcome } from '../tools/kind';
import { WebFetchInputSchema } from '../tools/web-fetch';

// A fetch has no side effect the tool promises, so a worker lost mid-call is retried once.
const web = proxyActivities<WebActivities>({
  taskQueue: TOOLS_TASK_QUEUE,
  scheduleToStartTimeout: '1 minute',
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 2, initialInterval: 500 },
});

export class WebTools {
  constructor(
    private readonly sessionId: string,
    private readonly agent: Agent,
  ) {}

  /** Runs web_fetch when the call names it and the agent offers it; undefined for any other call. */
  run(use: { id: string; name: string; input: unknown }): Promise<ToolOutcome> | undefined {
    const config = this.agent.webFetch;
    if (use.name !== 'web_fetch' || !config) return undefined;
    return this.fetch(use, config);
  }

  private async fetch(
    use: { id: string; name: string; input: unknown },
    config: NonNullable<Agent['webFetch']>,
  ): Promise<ToolOutcome> {
    const parsed = WebFetchInputSchema.safeParse(use.input ?? {});
    if (!parsed.success) return toolError(invalidInput(use.name, parsed.error));
    try {
      const r = await web.webFetch.executeWithOptions({ summary: `web_fetch: ${parsed.data.url.slice(0, 70)}` }, [
        { sessionId: this.sessionId, toolUseId: use.id, url: parsed.data.url, config },
      ]);
      return r.isError ? { ...r, error: { kind: 'tool', message: r.output.slice(0, 500) } } : r;
    } catch (err) {
      if (isCancellation(err)) throw err;
      return toolError(`web_fetch failed: ${failureMessage(err)}`, 'infra');
    }
  }
}
