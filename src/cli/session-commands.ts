// The session commands of `agents`: start and drive a session, read and follow its log, list, wake and fork sessions.
import type { Command } from 'commander';
import type { Client } from '@temporalio/client';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import YAML from 'yaml';
import { loadConfig, type Config } from '../config';
import { parseCodecKeys } from '../codec';
import { colorEnabled, styles } from '../host/term';
import { SessionWatcher } from './session-watch';
import { loadCodecKey } from '../key-files';
import { AgentSchema, DEFAULT_MODEL, formatIssues, type Agent } from '../session/agent';
import type { SessionEvent } from '../session/events';
import { formatEvent } from '../session/format';
import { WORKFLOW_TYPE } from '../session/queues';
import { endSignal, interruptSignal, sendMessageUpdate, statusQuery, type SessionInput } from '../session/contract';
import type { SessionLog } from '../log/session-log';
import { forkSession, startSessionRun, wakeSession } from '../session-ops';
import { parsePriceTable } from '../observability/pricing';
import {
  formatDuration,
  sessionCost,
  sessionStats,
  spendLine,
  threadLine,
  workspaceSnapshotsOf,
} from '../observability/session-stats';
import { AGENT_MODEL_KEY, AGENT_NAME_KEY, SESSION_STATE_KEY } from '../session/search-attributes';
import {
  CliError,
  connect,
  err,
  nonNegativeInt,
  opError,
  out,
  parseMessage,
  positiveInt,
  sessionId,
  sessionLog,
  uiLink,
  update,
  withSession,
} from './cli-common';
import { endsTurn } from '../session/turn-end';

export function loadAgent(
  file: string | undefined,
  overrides: { system?: string; model?: string },
  config: Config,
): Agent {
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new CliError(
        `cannot read agent file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      );
    }
    try {
      raw = (/\.json$/i.test(file) ? JSON.parse(text) : YAML.parse(text)) ?? {};
    } catch (e) {
      throw new CliError(
        `agent file ${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(e as Error).message.split('\n')[0]}`,
      );
    }
    if (typeof raw !== 'object' || Array.isArray(raw)) throw new CliError(`agent file ${file} must hold an object`);
  }
  const merged = {
    ...raw,
    model: overrides.model ?? raw.model ?? config.AGENT_MODEL ?? DEFAULT_MODEL,
    ...(overrides.system !== undefined ? { system: overrides.system } : {}),
  };
  const parsed = AgentSchema.safeParse(merged);
  if (!parsed.success) throw new CliError(`invalid agent${file ? ` file ${file}` : ''}: ${formatIssues(parsed.error)}`);
  return parsed.data;
}

async function* readEvents(log: SessionLog, id: string, from: number, limit?: number): AsyncGenerator<SessionEvent> {
  let next = from;
  let remaining = limit ?? Infinity;
  while (remaining > 0) {
    const page = await log.read(id, next, Math.min(1000, remaining));
    for (const e of page.events) yield e;
    if (page.events.length === 0) return;
    remaining -= page.events.length;
    next = page.nextSeq;
  }
}

/** The end of a turn: its final reply, an error, or an interrupt after event `afterSeq`. */
const endsTurnAfter = (afterSeq: number) => (e: SessionEvent) => e.seq > afterSeq && endsTurn(e);

/** The API relaying live previews, when AGENTS_API_URL names one; it goes with a key. */
function previewRelay(config: Config): { url: string; apiKey: string } | undefined {
  if (!config.AGENTS_API_URL) return undefined;
  if (!config.AGENTS_API_KEY)
    throw new CliError(
      'AGENTS_API_URL needs AGENTS_API_KEY (or AGENTS_API_KEY_FILE): an API key of the session’s workspace',
    );
  return { url: config.AGENTS_API_URL, apiKey: config.AGENTS_API_KEY };
}

/** Follows a session's log (and, with `stream`, the live deltas of its work in progress) on `out`. */
async function follow(
  client: Client,
  config: Config,
  id: string,
  opts: { from: number; json?: boolean; stream: boolean; toStderr?: boolean; until?: (e: SessionEvent) => boolean },
): Promise<void> {
  const { log } = sessionLog(client, config);
  const target = opts.toStderr ? process.stderr : process.stdout;
  const relay = opts.stream ? previewRelay(config) : undefined;
  const watcher = new SessionWatcher({
    client,
    log,
    sessionId: id,
    from: opts.from,
    mode: opts.json ? 'json' : target.isTTY ? 'tty' : 'plain',
    streamKey: opts.stream && !relay ? parseCodecKeys(loadCodecKey(config)).current.key : undefined,
    relay,
    out: (t) => target.write(t),
    note: err,
    dim: styles(colorEnabled(target)).dim,
    columns: () => target.columns || 80,
    rows: () => target.rows || 24,
    until: opts.until,
  });
  const stop = () => {
    watcher.stop();
    process.exit(130);
  };
  process.once('SIGINT', stop);
  try {
    await withSession(id, async () => {
      await client.workflow.getHandle(id).describe();
      await watcher.run();
    });
  } finally {
    process.removeListener('SIGINT', stop);
  }
}

/** `agents start`: a new session, optionally with a first message, whose turn `--wait` follows on stderr. */
export function startCommand(program: Command): void {
  program
    .command('start')
    .description('start a session, optionally with a first message')
    .option('--id <id>', 'session id (default: a new random id)', sessionId)
    .option('--agent <file>', 'agent file, JSON or YAML')
    .option('--system <text>', 'system prompt (overrides the agent file)')
    .option('--model <model>', 'model name (overrides the agent file)')
    .option('--json', 'print {"sessionId"} on stdout')
    .option('--wait', 'with a message: wait for the first turn to finish, showing its progress on stderr')
    .argument('[message]', 'first user message')
    .action(
      async (
        message: string | undefined,
        opts: { id?: string; agent?: string; system?: string; model?: string; json?: boolean; wait?: boolean },
      ) => {
        const config = loadConfig();
        const agent = loadAgent(opts.agent, opts, config);
        const first: SessionInput['message'] = message === undefined ? undefined : parseMessage(message);
        const id = opts.id ?? `ses-${randomUUID()}`;
        const client = await connect(config);
        // A session id names one log for good: an id whose runs are gone may still have it in the archive.
        if ((await sessionLog(client, config).archive.segments(id)).length > 0)
          throw new CliError(`session ${id} already exists (its log is in the session archive)`);
        try {
          await startSessionRun(client, {
            workflowId: id,
            input: { agent, ...(first ? { message: first } : {}) },
            agent,
            firstMessage: first?.text,
          });
        } catch (e) {
          if ((e as Error).name === 'WorkflowExecutionAlreadyStartedError')
            throw new CliError(`session ${id} already exists`);
          throw e;
        }
        err(`Web UI: ${uiLink(config, id)}`);
        // The turn streams on stderr (a terminal redraws it in place), so stdout still holds only the id.
        if (opts.wait && first)
          await follow(client, config, id, { from: 0, stream: true, toStderr: true, until: endsTurnAfter(1) });
        if (opts.json) out(JSON.stringify({ sessionId: id }));
        else out(id);
      },
    );
}

/** `agents send`: a user message, and the seq it was appended at. */
export function sendCommand(program: Command): void {
  program
    .command('send')
    .description('send a user message; prints the seq it was appended at')
    .argument('<id>', 'session id', sessionId)
    .argument('<text>', 'message text')
    .option('--message-id <id>', 'idempotency key: a repeated id is appended once')
    .option('--json', 'print {"seq"} on stdout')
    .action(async (id: string, text: string, opts: { messageId?: string; json?: boolean }) => {
      const m = parseMessage(text, opts.messageId);
      const client = await connect(loadConfig());
      const result = await withSession(id, () => update(client, id, sendMessageUpdate, m));
      out(opts.json ? JSON.stringify(result) : String(result.seq));
    });
}

/** `agents events`: a slice of a session's log, or with `--follow` its new events until it ends. */
export function eventsCommand(program: Command): void {
  program
    .command('events')
    .description("print a session's events")
    .argument('<id>', 'session id', sessionId)
    .option('--from <n>', 'first seq', nonNegativeInt, 0)
    .option('--limit <k>', 'how many events (default: all)', positiveInt)
    .option('--json', 'one JSON event per line')
    .option('--follow', 'keep printing new events until the session ends (like watch, without live deltas)')
    .action(async (id: string, opts: { from: number; limit?: number; json?: boolean; follow?: boolean }) => {
      const config = loadConfig();
      const client = await connect(config);
      if (opts.follow) return follow(client, config, id, { from: opts.from, json: opts.json, stream: false });
      const { archive, log } = sessionLog(client, config);
      let n = 0;
      await withSession(id, async () => {
        for await (const e of readEvents(log, id, opts.from, opts.limit)) {
          out(opts.json ? JSON.stringify(e) : formatEvent(e));
          n++;
        }
      });
      // Nothing printed: tell an unknown session from a slice past the end.
      if (n === 0 && (await archive.segments(id)).length === 0)
        await withSession(id, () => client.workflow.getHandle(id).describe());
    });
}

/** `agents watch`: a session's log and its live output until it ends. */
export function watchCommand(program: Command): void {
  program
    .command('watch')
    .description(
      'follow a session until it ends: its log, and model tokens and tool output live as they are produced (from each worker, or relayed by the API at AGENTS_API_URL with AGENTS_API_KEY)',
    )
    .argument('<id>', 'session id', sessionId)
    .option('--from <n>', 'first seq', nonNegativeInt, 0)
    .option(
      '--json',
      'one JSON object per line: events (with seq), and {"type":"stream"|"delta",item,...} for live output',
    )
    .option('--no-stream', 'follow the log only, without live deltas')
    .action(async (id: string, opts: { from: number; json?: boolean; stream: boolean }) => {
      const config = loadConfig();
      await follow(await connect(config), config, id, { from: opts.from, json: opts.json, stream: opts.stream });
    });
}

/** `agents status`: a session's state, usage, cost and what it waits for. */
export function statusCommand(program: Command): void {
  program
    .command('status')
    .description(
      "print a session's state, tokens, cost and spending against its budget, time, threads, outcomes, and tool errors apart from infrastructure errors",
    )
    .argument('<id>', 'session id', sessionId)
    .option('--json', 'print the status object')
    .action(async (id: string, opts: { json?: boolean }) => {
      const config = loadConfig();
      const client = await connect(config);
      const status = await withSession(id, () => client.workflow.getHandle(id).query(statusQuery));
      const events: SessionEvent[] = [];
      for await (const e of readEvents(sessionLog(client, config).log, id, 0)) events.push(e);
      const stats = sessionStats(events, new Date());
      const prices = parsePriceTable(config.MODEL_PRICES);
      const costUsd = 'table' in prices ? sessionCost(status.usage, stats.model, prices.table) : undefined;
      const snapshots = workspaceSnapshotsOf(events);
      if (opts.json) out(JSON.stringify({ ...status, ...stats, costUsd: costUsd ?? null, snapshots }));
      else {
        out(`state: ${status.state}`);
        if (stats.model) out(`model: ${stats.model}`);
        if (stats.elapsedMs !== undefined) out(`time: ${formatDuration(stats.elapsedMs)} since ${stats.startedAt}`);
        out(
          `cost: ${costUsd === undefined ? `unknown (no price for ${stats.model ?? 'this model'}; set MODEL_PRICES)` : `$${costUsd.toFixed(4)}`}`,
        );
        // The list cost the session counts itself (sub-agents' included), at the prices it was started with.
        if (status.listCost) out(`list cost: ${spendLine(status.listCost)}`);
        // A coordinator's threads, each with its own log.
        for (const t of stats.threads) out(threadLine(t));
        // Each outcome (user.define_outcome): where it stands, at which evaluation, and the grader's latest word.
        for (const o of status.outcomes ?? [])
          out(
            `outcome ${o.outcomeId}: ${o.result}, evaluation ${o.iteration + 1} of at most ${o.maxIterations}${o.explanation ? ` (${o.explanation.replace(/\s+/g, ' ').slice(0, 200)})` : ''}`,
          );
        out(`model replies: ${stats.modelReplies}; tool calls: ${stats.toolCalls}`);
        out(`tool errors: ${stats.toolErrors} (the tool failed)`);
        out(`infra errors: ${stats.infraErrors} (a sandbox, host or MCP server failed)`);
        if (stats.deniedErrors > 0) out(`denied: ${stats.deniedErrors}`);
        const sessionErrors = Object.entries(stats.sessionErrors);
        if (sessionErrors.length > 0) out(`session errors: ${sessionErrors.map(([k, n]) => `${n} ${k}`).join(', ')}`);
        out(`lastSeq: ${status.lastSeq}`);
        if (status.run !== undefined)
          out(
            `run: ${status.run} (its events start at seq ${status.firstSeq ?? 0}; earlier ones are in the session archive)`,
          );
        const u = status.usage;
        const input = u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens;
        out(
          `usage: ${input} input tokens (${u.cacheReadInputTokens} cache reads, ${u.cacheCreationInputTokens} cache writes), ${u.outputTokens} output tokens`,
        );
        out(`cache hit rate: ${input ? ((100 * u.cacheReadInputTokens) / input).toFixed(1) : '0.0'}% of input tokens`);
        for (const sb of status.sandboxes)
          out(`sandbox ${sb.name}: ${sb.state} on ${sb.host} (${sb.sandboxId.slice(0, 12)})`);
        for (const w of snapshots)
          out(
            `workspace ${w.name}: ${w.taken} snapshot${w.taken === 1 ? '' : 's'} taken (${w.storedBytes} bytes stored in all); latest ${w.latest.seq} at ${w.latest.at}: ${w.latest.files} files, ${w.latest.sizeBytes} bytes${w.restores ? `; restored ${w.restores} time${w.restores === 1 ? '' : 's'}` : ''}`,
          );
        for (const p of status.pending ?? []) {
          const call = `${p.name} ${JSON.stringify(p.input).slice(0, 200)}`;
          if (p.kind === 'approval')
            out(
              `pending approval ${p.toolUseId}: ${call} (${p.policy}${p.expiresAt ? `; ${p.onTimeout} at ${p.expiresAt}` : ''})`,
            );
          else out(`pending client tool ${p.toolUseId}: ${call}`);
        }
      }
    });
}

/** `agents list`: the sessions Temporal's visibility store finds. */
export function listCommand(program: Command): void {
  program
    .command('list')
    .description('list sessions: id, status, state, agent, model, start time')
    .option('--json', 'one JSON object per line')
    .option('--limit <k>', 'at most this many', positiveInt, 100)
    .option('--query <q>', 'a visibility filter ANDed in, e.g. AgentName="coder" or AgentSessionState="running"')
    .action(async (opts: { json?: boolean; limit: number; query?: string }) => {
      const client = await connect(loadConfig());
      let n = 0;
      const query = `WorkflowType = '${WORKFLOW_TYPE}'${opts.query ? ` AND (${opts.query})` : ''}`;
      for await (const wf of client.workflow.list({ query })) {
        const sa = wf.typedSearchAttributes;
        const row = {
          sessionId: wf.workflowId,
          status: wf.status.name,
          startTime: wf.startTime.toISOString(),
          state: sa.get(SESSION_STATE_KEY),
          agent: sa.get(AGENT_NAME_KEY),
          model: sa.get(AGENT_MODEL_KEY),
        };
        out(
          opts.json
            ? JSON.stringify(row)
            : [row.sessionId, row.status, row.state ?? '-', row.agent ?? '-', row.model ?? '-', row.startTime].join(
                '\t',
              ),
        );
        if (++n >= opts.limit) break;
      }
    });
}

/** `agents wake`: a new run for a session whose workflow was terminated or failed. */
export function wakeCommand(program: Command): void {
  program
    .command('wake')
    .description('restart a session whose workflow was terminated or failed, as a new run that continues its log')
    .argument('<id>', 'session id', sessionId)
    .option('--json', 'print {"sessionId","runId","nextSeq"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const config = loadConfig();
      const client = await connect(config);
      const { archive } = sessionLog(client, config);
      const r = await opError(() => wakeSession(client, archive, id));
      if (opts.json) out(JSON.stringify({ sessionId: id, runId: r.runId, nextSeq: r.nextSeq }));
      err(`woke ${id} as run ${r.runId}; its log continues at seq ${r.nextSeq}`);
    });
}

/** `agents fork`: a new session whose log begins with another's up to a seq. */
export function forkCommand(program: Command): void {
  program
    .command('fork')
    .description(
      "start a new session whose log begins with another session's events up to SEQ; with --sandboxes, each sandbox's workspace is the source's as of its last snapshot at or before SEQ",
    )
    .argument('<id>', 'the session to fork', sessionId)
    .requiredOption('--at <seq>', 'the last event of the source the fork keeps', nonNegativeInt)
    .option('--id <id>', 'the new session id (default: a new random id)', sessionId)
    .option(
      '--sandboxes',
      "give the fork sandboxes from the source's recipes, each restored from the source's last workspace snapshot at or before SEQ (default: no sandboxes and no files)",
    )
    .option('--json', 'print {"sessionId"} on stdout')
    .argument('[message]', "the fork's first user message")
    .action(
      async (
        source: string,
        message: string | undefined,
        opts: { at: number; id?: string; sandboxes?: boolean; json?: boolean },
      ) => {
        const first = message === undefined ? undefined : parseMessage(message);
        const config = loadConfig();
        const client = await connect(config);
        const { archive, log } = sessionLog(client, config);
        const id = opts.id ?? `ses-${randomUUID()}`;
        const r = await opError(() =>
          forkSession(client, archive, log, { source, at: opts.at, id, sandboxes: opts.sandboxes, message: first }),
        );
        out(opts.json ? JSON.stringify({ sessionId: id }) : id);
        err(`forked ${source} at seq ${opts.at}; Web UI: ${uiLink(config, id)}`);
        for (const [name, from] of Object.entries(r.workspaces))
          err(
            from
              ? `sandbox ${name}: its workspace starts from snapshot ${from.snapshotSeq} of session ${from.sessionId}`
              : `sandbox ${name}: no snapshot at or before seq ${opts.at}; its workspace starts from the recipe`,
          );
      },
    );
}

/** `agents interrupt` and `agents end`: a signal to a running session. */
export function signalCommands(program: Command): void {
  for (const [name, signal, what] of [
    ['interrupt', interruptSignal, 'stop the turn in flight'],
    ['end', endSignal, 'end the session'],
  ] as const) {
    program
      .command(name)
      .description(what)
      .argument('<id>', 'session id', sessionId)
      .option('--reason <text>', 'why')
      .option('--json', `print {"sessionId","sent":"${name}"} on stdout`)
      .action(async (id: string, opts: { reason?: string; json?: boolean }) => {
        const client = await connect(loadConfig());
        await withSession(id, async () => {
          const handle = client.workflow.getHandle(id);
          const desc = await handle.describe();
          if (desc.status.name !== 'RUNNING')
            throw new CliError(`session ${id} is not running (${desc.status.name.toLowerCase()})`);
          await handle.signal(signal, opts.reason ? { reason: opts.reason } : {});
        });
        if (opts.json) out(JSON.stringify({ sessionId: id, sent: name }));
        err(`${name} sent to ${id}`);
      });
  }
}
