// ModelCaller: one model reply over the run's window, whichever way the call reaches the model's worker.
//
// The three transports of a call's context:
// - the cache plus digest: the worker that ran the run's previous call was handed each task's new events, so the
//   call carries only the digest of what was appended since, and the worker checks its copy against it;
// - the query: the worker reads the events it lacks from the run (a run's first call, and after a long stretch);
// - the local activity (limits.modelCall 'local'): the call is handed the run's events of its window itself.
// A call that is not local sends the platform's own tool specs by reference (src/tools/tool-refs.ts).
import { patched } from '@temporalio/workflow';
import type { ModelReply } from '../model/model-client';
import type { CallModelInput, CallModelResult } from '../brain/brain-activities';
import type { Agent } from '../session/agent';
import { eventsDigest } from '../session/digest';
import { modelSummary } from '../session/summaries';
import type { ToolSpec } from '../tools/kind';
import { compactToolSpecs } from '../tools/tool-refs';
import type { SessionActivities } from './activity-options';
import { withLoggedRetries } from './model-retry';
import type { SessionRun } from './session-run';

/** A model call's input carries the digest of at most this many events appended since the previous call. */
const MAX_TAIL_DIGEST_EVENTS = 200;

type ModelProxies = Pick<SessionActivities, 'model' | 'localModel'>;

export class ModelCaller {
  /**
   * A local model call is handed the run's events of its window: a local activity's input is never written to
   * history, and the worker running it is the one holding the run, whose task stays open meanwhile (a query for
   * them would wait for it). Only a window reaching back before the run is read, from the archive.
   */
  private readonly local: boolean;
  /**
   * Tool specs of the platform's own go as references (src/tools/tool-refs.ts), through callModelToolRefs: sent
   * whole, every model call wrote them to history. A local call's input is never written to history, so it carries
   * them whole.
   */
  private readonly toolRefs: boolean;
  /** The last seq a model call of this run read (undefined before the first one). */
  private readThrough: number | undefined;

  constructor(
    private readonly agent: Agent,
    private readonly acts: SessionActivities,
    private readonly run: SessionRun,
    /** The specs the model is offered (listed MCP tools are added to it as the run goes). */
    private readonly toolSpecs: ToolSpec[],
  ) {
    this.local = agent.limits.modelCall === 'local' && patched('model-local-activity');
    this.toolRefs = !this.local && patched('model-tool-refs');
  }

  /** One model reply over the current window, compacting the window first when it is over budget; with the last seq its call read. */
  async nextReply(): Promise<{ reply: ModelReply; throughSeq: number }> {
    const { limits } = this.agent;
    const summary = { summary: modelSummary(this.run.countModelCall(), this.run.run) };
    const firstRequest = this.request();
    const first = await this.callModel(summary, { ...firstRequest, contextTokens: limits.contextTokens });
    this.readThrough = firstRequest.throughSeq;
    if (first.compact === undefined) return { reply: first, throughSeq: firstRequest.throughSeq };
    const cutSeq = first.compact.cutSeq;
    const compactRequest = this.request();
    const c = await this.withRetries((p) =>
      p.model.compactContext.executeWithOptions({ summary: 'compact context' }, [{ ...compactRequest, cutSeq }]),
    );
    this.readThrough = compactRequest.throughSeq;
    this.run.compacted({
      type: 'context_compacted',
      throughSeq: cutSeq - 1,
      summary: c.summary,
      tokensBefore: c.tokensBefore,
      tokensAfter: c.tokensAfter,
    });
    // Over budget even now (one huge tail): send it anyway rather than compact in a loop.
    const secondRequest = this.request();
    const second = await this.callModel(summary, secondRequest);
    this.readThrough = secondRequest.throughSeq;
    if (second.compact !== undefined) throw new Error('callModel asked for a compaction without a budget');
    return { reply: second, throughSeq: secondRequest.throughSeq };
  }

  private request() {
    const { agent, run } = this;
    const { limits } = agent;
    const throughSeq = run.nextSeq() - 1;
    return {
      sessionId: run.sessionId,
      throughSeq,
      model: agent.model,
      system: agent.system,
      tools: this.toolSpecs,
      maxTokens: limits.maxOutputTokens,
      caching: agent.promptCaching,
      window: run.window,
      streamIdleMs: limits.modelStreamIdleMs,
      ...this.tailOf(throughSeq),
    };
  }

  /**
   * The digest of what was appended since the run's previous model call, for a call reading through `throughSeq`:
   * the worker that ran that call, and was handed each task's new events, checks them against it instead of
   * reading them back. Absent for a run's first call and after a long stretch (the worker reads the log then).
   */
  private tailOf(throughSeq: number) {
    const { run, readThrough } = this;
    if (
      this.local ||
      readThrough === undefined ||
      throughSeq - readThrough > MAX_TAIL_DIGEST_EVENTS ||
      !patched('model-tail-digest')
    )
      return {};
    const fromSeq = readThrough + 1;
    return {
      tail: { fromSeq, digest: eventsDigest(run.events.slice(fromSeq - run.baseSeq, throughSeq + 1 - run.baseSeq)) },
    };
  }

  /** A model request; histories recorded before retries were logged leave every retry to Temporal, unseen. */
  private withRetries<T>(call: (proxies: ModelProxies) => Promise<T>): Promise<T> {
    const { acts } = this;
    return patched('model-retry-event')
      ? withLoggedRetries(() => call(acts.loggedRetries), this.run, this.agent.limits.modelRetry)
      : call(acts);
  }

  private callModel(summary: { summary: string }, request: CallModelInput): Promise<CallModelResult> {
    const { run } = this;
    return this.withRetries((p) => {
      if (!this.local)
        return this.toolRefs
          ? p.model.callModelToolRefs.executeWithOptions(summary, [
              { ...request, tools: compactToolSpecs(request.tools) },
            ])
          : p.model.callModel.executeWithOptions(summary, [request]);
      const from = Math.max(request.window?.fromSeq ?? 0, run.baseSeq);
      return p.localModel.callModel.executeWithOptions(summary, [
        { ...request, events: run.events.slice(from - run.baseSeq, request.throughSeq + 1 - run.baseSeq) },
      ]);
    });
  }
}
