#!/usr/bin/env node
// The `agents` command line: start and drive sessions, read and follow their logs, run workers and the dev stack.
import { Command, InvalidArgumentError } from 'commander';
import type { Client } from '@temporalio/client';
import fs from 'node:fs';
import path from 'node:path';

import { randomUUID } from 'node:crypto';
import YAML from 'yaml';
import { loadConfig, type Config } from './config';
import { parseCodecKeys } from './codec';
import { colorEnabled, styles } from './infra/term';
import { SessionWatcher } from './stream/watch';
import { loadCodecKey } from './infra/keys';
import { AgentSchema, DEFAULT_MODEL, formatIssues, type Agent } from './session/agent';
import type { SessionEvent } from './session/events';
import { formatEvent } from './session/format';
import { WORKER_ROLES, WORKFLOW_TYPE, type WorkerRole } from './session/queues';
import { MAX_FILE_BYTES } from './session/paths';
import {
  ResolveToolUseSchema,
  SubmitToolResultSchema,
  getFileUpdate,
  putFileUpdate,
  endSignal,
  handoffSandboxUpdate,
  interruptSignal,
  sendMessageUpdate,
  statusQuery,
  type SessionInput,
} from './workflows/messages';
import type { SessionLog } from './log/session-log';
import { forkSession, resolveToolUse, startSessionRun, submitToolResult, wakeSession } from './session-ops';
import { parsePriceTable } from './observability/pricing';
import { formatDuration, sessionCost, sessionStats } from './observability/session-stats';
import { AGENT_MODEL_KEY, AGENT_NAME_KEY, SESSION_STATE_KEY } from './session/search-attributes';
import { CHECKS, formatDoctor, runDoctor, type CheckName } from './doctor';
import { addExamples, PROGRAM_HELP } from './cli/help';
import { CliError, connect, err, nonNegativeInt, opError, out, parseMessage, positiveInt, secretName, sessionId, sessionLog, uiLink, update, withSession } from './cli/common';

export { CliError };

export function loadAgent(file: string | undefined, overrides: { system?: string; model?: string }, config: Config): Agent {
  let raw: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new CliError(`cannot read agent file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    try {
      raw = (/\.json$/i.test(file) ? JSON.parse(text) : YAML.parse(text)) ?? {};
    } catch (e) {
      throw new CliError(`agent file ${file} is not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(e as Error).message.split('\n')[0]}`);
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
const endsTurn = (afterSeq: number) => (e: SessionEvent) =>
  e.seq > afterSeq && ((e.type === 'assistant_message' && e.stopReason !== 'tool_use') || e.type === 'error' || e.type === 'interrupted' || e.type === 'session_ended');

/** Follows a session's log (and, with `stream`, the live deltas of its work in progress) on `out`. */
async function follow(
  client: Client,
  config: Config,
  id: string,
  opts: { from: number; json?: boolean; stream: boolean; toStderr?: boolean; until?: (e: SessionEvent) => boolean },
): Promise<void> {
  const { log } = sessionLog(client, config);
  const target = opts.toStderr ? process.stderr : process.stdout;
  const watcher = new SessionWatcher({
    client,
    log,
    sessionId: id,
    from: opts.from,
    mode: opts.json ? 'json' : target.isTTY ? 'tty' : 'plain',
    streamKey: opts.stream ? parseCodecKeys(loadCodecKey(config)).current.key : undefined,
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

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('agents')
    .description('Run long-lived AI agent sessions durably on Temporal')
    // A parse error is one line, like every other refusal: commander puts its suggestion on a line of its own.
    .configureOutput({ writeErr: (s) => process.stderr.write(s), outputError: (s, write) => write(`${s.trimEnd().replace(/\s*\n\s*/g, ' ')}\n`) });

  program
    .command('start')
    .description('start a session, optionally with a first message')
    .option('--id <id>', 'session id (default: a new random id)', sessionId)
    .option('--agent <file>', 'agent file, JSON or YAML')
    .option('--system <text>', 'system prompt (overrides the agent file)')
    .option('--model <model>', 'model name (overrides the agent file)')
    .option('--json', 'print {"sessionId"} on stdout')
    .option('--wait', "with a message: wait for the first turn to finish, showing its progress on stderr")
    .argument('[message]', 'first user message')
    .action(async (message: string | undefined, opts: { id?: string; agent?: string; system?: string; model?: string; json?: boolean; wait?: boolean }) => {
      const config = loadConfig();
      const agent = loadAgent(opts.agent, opts, config);
      const first: SessionInput['message'] = message === undefined ? undefined : parseMessage(message);
      const id = opts.id ?? `ses-${randomUUID()}`;
      const client = await connect(config);
      // A session id names one log for good: an id whose runs are gone may still have it in the archive.
      if ((await sessionLog(client, config).archive.segments(id)).length > 0) throw new CliError(`session ${id} already exists (its log is in the session archive)`);
      try {
        await startSessionRun(client, { workflowId: id, input: { agent, ...(first ? { message: first } : {}) }, agent, firstMessage: first?.text });
      } catch (e) {
        if ((e as Error).name === 'WorkflowExecutionAlreadyStartedError') throw new CliError(`session ${id} already exists`);
        throw e;
      }
      err(`Web UI: ${uiLink(config, id)}`);
      // The turn streams on stderr (a terminal redraws it in place), so stdout still holds only the id.
      if (opts.wait && first) await follow(client, config, id, { from: 0, stream: true, toStderr: true, until: endsTurn(1) });
      if (opts.json) out(JSON.stringify({ sessionId: id }));
      else out(id);
    });

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
      if (n === 0 && (await archive.segments(id)).length === 0) await withSession(id, () => client.workflow.getHandle(id).describe());
    });

  program
    .command('watch')
    .description('follow a session until it ends: its log, and model tokens and tool output live as they are produced')
    .argument('<id>', 'session id', sessionId)
    .option('--from <n>', 'first seq', nonNegativeInt, 0)
    .option('--json', 'one JSON object per line: events (with seq), and {"type":"stream"|"delta",item,...} for live output')
    .option('--no-stream', 'follow the log only, without live deltas')
    .action(async (id: string, opts: { from: number; json?: boolean; stream: boolean }) => {
      const config = loadConfig();
      await follow(await connect(config), config, id, { from: opts.from, json: opts.json, stream: opts.stream });
    });

  program
    .command('status')
    .description("print a session's state, tokens, cost, time, and tool errors apart from infrastructure errors")
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
      if (opts.json) out(JSON.stringify({ ...status, ...stats, costUsd: costUsd ?? null }));
      else {
        out(`state: ${status.state}`);
        if (stats.model) out(`model: ${stats.model}`);
        if (stats.elapsedMs !== undefined) out(`time: ${formatDuration(stats.elapsedMs)} since ${stats.startedAt}`);
        out(`cost: ${costUsd === undefined ? `unknown (no price for ${stats.model ?? 'this model'}; set MODEL_PRICES)` : `$${costUsd.toFixed(4)}`}`);
        out(`model replies: ${stats.modelReplies}; tool calls: ${stats.toolCalls}`);
        out(`tool errors: ${stats.toolErrors} (the tool failed)`);
        out(`infra errors: ${stats.infraErrors} (a sandbox, host or MCP server failed)`);
        if (stats.deniedErrors > 0) out(`denied: ${stats.deniedErrors}`);
        const sessionErrors = Object.entries(stats.sessionErrors);
        if (sessionErrors.length > 0) out(`session errors: ${sessionErrors.map(([k, n]) => `${n} ${k}`).join(', ')}`);
        out(`lastSeq: ${status.lastSeq}`);
        if (status.run !== undefined) out(`run: ${status.run} (its events start at seq ${status.firstSeq ?? 0}; earlier ones are in the session archive)`);
        const u = status.usage;
        const input = u.inputTokens + u.cacheReadInputTokens + u.cacheCreationInputTokens;
        out(`usage: ${input} input tokens (${u.cacheReadInputTokens} cache reads, ${u.cacheCreationInputTokens} cache writes), ${u.outputTokens} output tokens`);
        out(`cache hit rate: ${input ? ((100 * u.cacheReadInputTokens) / input).toFixed(1) : '0.0'}% of input tokens`);
        for (const sb of status.sandboxes) out(`sandbox ${sb.name}: ${sb.state} on ${sb.host} (${sb.sandboxId.slice(0, 12)})`);
        for (const p of status.pending ?? []) {
          const call = `${p.name} ${JSON.stringify(p.input).slice(0, 200)}`;
          if (p.kind === 'approval') out(`pending approval ${p.toolUseId}: ${call} (${p.policy}${p.expiresAt ? `; ${p.onTimeout} at ${p.expiresAt}` : ''})`);
          else out(`pending client tool ${p.toolUseId}: ${call}`);
        }
      }
    });

  for (const [name, allow, what] of [
    ['approve', true, 'approve a tool call waiting for approval'],
    ['deny', false, 'deny a tool call waiting for approval; the model gets the reason'],
  ] as const) {
    program
      .command(name)
      .description(what)
      .argument('<id>', 'session id', sessionId)
      .argument('<toolUseId>', 'the tool_use id (see `agents status`)')
      .option('--reason <text>', allow ? 'why (recorded)' : 'why (recorded, and told to the model)')
      .option('--by <name>', 'who decides (recorded; default user)')
      .option('--json', 'print {"seq"} of the approval_resolved event')
      .action(async (id: string, toolUseId: string, opts: { reason?: string; by?: string; json?: boolean }) => {
        const decision = ResolveToolUseSchema.safeParse({ toolUseId, allow, ...(opts.reason !== undefined ? { reason: opts.reason } : {}), ...(opts.by !== undefined ? { by: opts.by } : {}) });
        if (!decision.success) throw new CliError(`invalid ${name}: ${formatIssues(decision.error)}`);
        const client = await connect(loadConfig());
        const r = await opError(() => resolveToolUse(client, id, decision.data));
        if (opts.json) out(JSON.stringify(r));
        else err(`${allow ? 'approved' : 'denied'} ${toolUseId} (event ${r.seq})`);
      });
  }

  program
    .command('submit')
    .description("answer a client tool call with the calling application's result")
    .argument('<id>', 'session id', sessionId)
    .argument('<toolUseId>', 'the tool_use id (see `agents status`)')
    .option('--output <text>', 'the result text')
    .option('--output-file <file>', 'read the result text from a file (- for stdin)')
    .option('--error', 'the tool failed; the output says how')
    .option('--json', 'print {"seq"} of the tool_result event')
    .action(async (id: string, toolUseId: string, opts: { output?: string; outputFile?: string; error?: boolean; json?: boolean }) => {
      if ((opts.output === undefined) === (opts.outputFile === undefined)) throw new CliError('give exactly one of --output and --output-file');
      let output = opts.output;
      if (opts.outputFile !== undefined) {
        try {
          output = fs.readFileSync(opts.outputFile === '-' ? 0 : opts.outputFile, 'utf8');
        } catch (e) {
          throw new CliError(`cannot read ${opts.outputFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
        }
      }
      const result = SubmitToolResultSchema.safeParse({ toolUseId, output, isError: opts.error === true });
      if (!result.success) throw new CliError(`invalid submit: ${formatIssues(result.error)}`);
      const client = await connect(loadConfig());
      const r = await opError(() => submitToolResult(client, id, result.data));
      if (opts.json) out(JSON.stringify(r));
      else err(`submitted the result of ${toolUseId} (event ${r.seq})`);
    });

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
        const row = { sessionId: wf.workflowId, status: wf.status.name, startTime: wf.startTime.toISOString(), state: sa.get(SESSION_STATE_KEY), agent: sa.get(AGENT_NAME_KEY), model: sa.get(AGENT_MODEL_KEY) };
        out(opts.json ? JSON.stringify(row) : [row.sessionId, row.status, row.state ?? '-', row.agent ?? '-', row.model ?? '-', row.startTime].join('\t'));
        if (++n >= opts.limit) break;
      }
    });

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

  program
    .command('fork')
    .description("start a new session whose log begins with another session's events up to SEQ")
    .argument('<id>', 'the session to fork', sessionId)
    .requiredOption('--at <seq>', 'the last event of the source the fork keeps', nonNegativeInt)
    .option('--id <id>', 'the new session id (default: a new random id)', sessionId)
    .option('--sandboxes', "give the fork fresh sandboxes from the source's recipes (default: none)")
    .option('--json', 'print {"sessionId"} on stdout')
    .argument('[message]', "the fork's first user message")
    .action(async (source: string, message: string | undefined, opts: { at: number; id?: string; sandboxes?: boolean; json?: boolean }) => {
      const first = message === undefined ? undefined : parseMessage(message);
      const config = loadConfig();
      const client = await connect(config);
      const { archive, log } = sessionLog(client, config);
      const id = opts.id ?? `ses-${randomUUID()}`;
      await opError(() => forkSession(client, archive, log, { source, at: opts.at, id, sandboxes: opts.sandboxes, message: first }));
      out(opts.json ? JSON.stringify({ sessionId: id }) : id);
      err(`forked ${source} at seq ${opts.at}; Web UI: ${uiLink(config, id)}`);
    });

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
          if (desc.status.name !== 'RUNNING') throw new CliError(`session ${id} is not running (${desc.status.name.toLowerCase()})`);
          await handle.signal(signal, opts.reason ? { reason: opts.reason } : {});
        });
        if (opts.json) out(JSON.stringify({ sessionId: id, sent: name }));
        err(`${name} sent to ${id}`);
      });
  }

  program
    .command('worker')
    .description('run workers against TEMPORAL_ADDRESS: brain (workflows, model calls), hands (sandboxes), tools (MCP) or all')
    .option('--role <role>', 'brain, hands, tools or all', (v) => {
      if (!(WORKER_ROLES as readonly string[]).includes(v)) throw new InvalidArgumentError(`must be one of ${WORKER_ROLES.join(', ')}`);
      return v;
    }, 'all')
    .option('--task-queue <queue>', 'the brain task queue to poll (default agents); sub-agents may run on their own', (v: string) => {
      if (!/^[A-Za-z0-9._-]{1,100}$/.test(v)) throw new InvalidArgumentError('task queues are letters, digits, dot, dash or underscore');
      return v;
    })
    .option('--json', 'print {"roles","hostId","streamUrl"} on stdout once polling')
    .action(async (opts: { role: WorkerRole; taskQueue?: string; json?: boolean }) => {
      const config = loadConfig(process.env, opts.role);
      const { startWorker } = await import('./worker');
      const worker = await startWorker({ role: opts.role, taskQueue: opts.taskQueue, address: config.TEMPORAL_ADDRESS, namespace: config.TEMPORAL_NAMESPACE, apiKey: config.ANTHROPIC_API_KEY, baseURL: config.ANTHROPIC_BASE_URL, dockerHost: config.DOCKER_HOST });
      if (opts.json) out(JSON.stringify({ roles: worker.roles, hostId: worker.hostId ?? null, streamUrl: worker.streamUrl ?? null }));
      const stop = () => void worker.shutdown();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await worker.done;
    });

  program
    .command('doctor')
    .description('check Temporal, the pollers on each task queue, Docker, the sandbox image, keys and the model endpoint; says what to do about each failure')
    .option('--role <role>', "a worker checking itself: only its role's parts, and pollers from this host (the compose healthchecks)", (v) => {
      if (!(WORKER_ROLES as readonly string[]).includes(v)) throw new InvalidArgumentError(`must be one of ${WORKER_ROLES.join(', ')}`);
      return v;
    })
    .option('--check <names>', 'only these checks, comma-separated (config, temporal, pollers, docker, sandbox-image, keys, model)', (v) =>
      v.split(',').map((c) => {
        if (!(CHECKS as readonly string[]).includes(c.trim())) throw new InvalidArgumentError(`unknown check ${c}; one of ${CHECKS.join(', ')}`);
        return c.trim() as CheckName;
      }),
    )
    .option('--json', 'print {ok, checks: [{name, ok, detail, fix?}]}')
    .action(async (opts: { role?: WorkerRole; check?: CheckName[]; json?: boolean }) => {
      const report = await runDoctor({ role: opts.role, only: opts.check });
      out(opts.json ? JSON.stringify(report) : formatDoctor(report));
      if (!report.ok) throw new CliError(`doctor: ${report.checks.filter((c) => !c.ok).map((c) => c.name).join(', ')} failed`);
    });

  const files = program.command('files').description("copy files into and out of a session's sandbox (provisions it if needed)");
  files
    .command('put')
    .description('copy LOCAL into the sandbox at PATH (relative to the workspace, or absolute inside it)')
    .argument('<id>', 'session id', sessionId)
    .argument('<local>', 'local file')
    .argument('<path>', 'path in the sandbox')
    .option('--sandbox <name>', 'sandbox name', 'main')
    .option('--json', 'print {"path","bytes"} on stdout')
    .action(async (id: string, local: string, target: string, opts: { sandbox: string; json?: boolean }) => {
      let content: Buffer;
      try {
        const stat = fs.statSync(local);
        if (!stat.isFile()) throw new CliError(`${local} is not a regular file`);
        if (stat.size > MAX_FILE_BYTES) throw new CliError(`${local} is ${stat.size} bytes; the limit is ${MAX_FILE_BYTES}`);
        content = fs.readFileSync(local);
      } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(`cannot read ${local}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
      }
      const client = await connect(loadConfig());
      const r = await withSession(id, () => update(client, id, putFileUpdate, { sandbox: opts.sandbox, path: target, contentBase64: content.toString('base64') }));
      if (opts.json) out(JSON.stringify({ path: r.path, bytes: r.bytes }));
      err(`wrote ${r.bytes} bytes to ${r.path}`);
    });
  files
    .command('get')
    .description('copy PATH out of the sandbox to LOCAL')
    .argument('<id>', 'session id', sessionId)
    .argument('<path>', 'path in the sandbox')
    .argument('<local>', 'local file')
    .option('--sandbox <name>', 'sandbox name', 'main')
    .option('--json', 'print {"path","bytes"} on stdout')
    .action(async (id: string, source: string, local: string, opts: { sandbox: string; json?: boolean }) => {
      const client = await connect(loadConfig());
      const r = await withSession(id, () => update(client, id, getFileUpdate, { sandbox: opts.sandbox, path: source }));
      fs.writeFileSync(local, Buffer.from(r.contentBase64, 'base64'));
      if (opts.json) out(JSON.stringify({ path: r.path, bytes: r.bytes }));
      err(`read ${r.bytes} bytes from ${r.path}`);
    });

  program
    .command('handoff')
    .description("pass one of session FROM's sandboxes to session TO: the container stays on its host, its owner changes, and FROM's later calls to it are denied")
    .argument('<from>', 'the session that holds the sandbox', sessionId)
    .argument('<sandbox>', 'the sandbox name, e.g. main', (v: string) => {
      if (!/^[a-z][a-z0-9-]{0,30}$/.test(v)) throw new InvalidArgumentError('sandbox names are lowercase letters, digits and -');
      return v;
    })
    .argument('<to>', 'the session that receives it', sessionId)
    .option('--json', 'print {"sandboxId"} on stdout')
    .action(async (from: string, sandbox: string, to: string, opts: { json?: boolean }) => {
      if (from === to) throw new CliError('a session cannot hand a sandbox to itself');
      const client = await connect(loadConfig());
      const desc = await withSession(to, () => client.workflow.getHandle(to).describe());
      if (desc.status.name !== 'RUNNING') throw new CliError(`session ${to} is not running (${desc.status.name.toLowerCase()})`);
      const r = await withSession(from, () => update(client, from, handoffSandboxUpdate, { sandbox, to }));
      if (opts.json) out(JSON.stringify(r));
      err(`sandbox ${sandbox} (${r.sandboxId.slice(0, 12)}) of ${from} now belongs to ${to}`);
    });

  const vault = program.command('vault').description('manage secrets in a vault; sessions refer to them as vault:<name>');
  const openVault = async () => {
    const config = loadConfig();
    const { FileVault } = await import('./vault');
    const { loadVaultKey } = await import('./infra/keys');
    return new FileVault(path.join(config.dataDir, 'vaults'), loadVaultKey(config));
  };
  vault
    .command('put')
    .description('store a secret read from stdin (never from the command line); the value is never printed')
    .argument('<name>', 'secret name', secretName)
    .option('--vault <vault>', 'vault (one per user or tenant)', secretName, 'default')
    .option('--json', 'print {"name","vault"} on stdout (never the value)')
    .action(async (name: string, opts: { vault: string; json?: boolean }) => {
      if (process.stdin.isTTY) err('reading the secret from stdin; end with Ctrl-D');
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const value = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
      if (value.length === 0) throw new CliError('no secret on stdin');
      (await openVault()).put(opts.vault, name, value);
      if (opts.json) out(JSON.stringify({ name, vault: opts.vault }));
      err(`stored ${name} in vault ${opts.vault}; refer to it as vault:${name}`);
    });
  vault
    .command('list')
    .description('list secret names (never values)')
    .option('--vault <vault>', 'vault', secretName, 'default')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { vault: string; json?: boolean }) => {
      for (const e of (await openVault()).list(opts.vault)) out(opts.json ? JSON.stringify(e) : `${e.name}\t${e.updatedAt}`);
    });
  vault
    .command('rm')
    .description('remove a secret')
    .argument('<name>', 'secret name', secretName)
    .option('--vault <vault>', 'vault', secretName, 'default')
    .option('--json', 'print {"name","vault"} on stdout')
    .action(async (name: string, opts: { vault: string; json?: boolean }) => {
      if (!(await openVault()).rm(opts.vault, name)) throw new CliError(`no secret ${name} in vault ${opts.vault}`);
      if (opts.json) out(JSON.stringify({ name, vault: opts.vault }));
      err(`removed ${name} from vault ${opts.vault}`);
    });

  vault
    .command('public-key')
    .description("print the public half of VAULT_KEY, which the API seals credentials to (set it as the API's VAULT_PUBLIC_KEY)")
    .option('--json', 'print {"publicKey"} on stdout')
    .action(async (opts: { json?: boolean }) => {
      const { loadVaultKey } = await import('./infra/keys');
      const { vaultPublicKey } = await import('./vault/sealed');
      const key = await vaultPublicKey(loadVaultKey(loadConfig()));
      out(opts.json ? JSON.stringify({ publicKey: key }) : key);
    });

  program
    .command('api')
    .description('serve the Managed Agents API on API_LISTEN (PostgreSQL at DATABASE_URL, else the embedded database under DATA_DIR) until Ctrl-C')
    .option('--listen <host:port>', 'address to listen on (default API_LISTEN, 127.0.0.1:8480)')
    .option('--json', 'print {"url"} on stdout once listening')
    .action(async (opts: { listen?: string; json?: boolean }) => {
      const config = loadConfig(process.env, 'api');
      if (opts.listen !== undefined && !/^[^\s]+:\d{1,5}$/.test(opts.listen)) throw new CliError('--listen must be HOST:PORT');
      const { startApiServer } = await import('./api/server');
      const api = await startApiServer(config, err, opts.listen);
      out(opts.json ? JSON.stringify({ url: api.url }) : api.url);
      err(`Managed Agents API at ${api.url} (storage: ${api.db.kind === 'postgres' ? 'PostgreSQL' : `embedded, ${path.join(config.dataDir, 'api-db')}`}); Ctrl-C stops it`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await api.stop();
    });

  const apiKeys = program.command('api-keys').description('manage API keys; each belongs to one workspace, and sees only its resources');
  const withApiDb = async <T>(fn: (db: import('./storage/db').Db) => Promise<T>): Promise<T> => {
    const config = loadConfig();
    const { openDb } = await import('./storage/db');
    let db;
    try {
      db = await openDb({ databaseUrl: config.DATABASE_URL, dataDir: config.dataDir });
    } catch (e) {
      throw new CliError((e as Error).message);
    }
    try {
      return await fn(db);
    } finally {
      await db.close();
    }
  };
  apiKeys
    .command('create')
    .description('make a key in a workspace (created on first use) and print it; it is shown only this once')
    .requiredOption('--workspace <name>', 'workspace name, e.g. default or team-a')
    .option('--json', 'print {"key","workspace"} on stdout')
    .action(async (opts: { workspace: string; json?: boolean }) => {
      const { createApiKey, WorkspaceNameSchema } = await import('./api/keys');
      const name = WorkspaceNameSchema.safeParse(opts.workspace);
      if (!name.success) throw new CliError(`--workspace: ${name.error.issues[0].message}`);
      const made = await withApiDb((db) => createApiKey(db, name.data));
      out(opts.json ? JSON.stringify({ key: made.key, workspace: made.workspace, id: made.id }) : made.key);
      err(`key ${made.id} for workspace ${made.workspace}; store it now, it is not shown again`);
    });
  apiKeys
    .command('list')
    .description('list keys (their ids, workspaces and first characters; never the keys)')
    .option('--json', 'one JSON object per line')
    .action(async (opts: { json?: boolean }) => {
      const { listApiKeys } = await import('./api/keys');
      for (const k of await withApiDb(listApiKeys)) out(opts.json ? JSON.stringify(k) : `${k.id}\t${k.workspace}\t${k.hint}\t${k.created_at}${k.revoked_at ? `\trevoked ${k.revoked_at}` : ''}`);
    });
  apiKeys
    .command('revoke')
    .description('revoke a key by id; requests with it get 401 from then on')
    .argument('<id>', 'key id, as api-keys list shows it')
    .option('--json', 'print {"id","revoked"} on stdout')
    .action(async (id: string, opts: { json?: boolean }) => {
      const { revokeApiKey } = await import('./api/keys');
      if (!(await withApiDb((db) => revokeApiKey(db, id)))) throw new CliError(`no live key ${id}`);
      if (opts.json) out(JSON.stringify({ id, revoked: true }));
      err(`revoked ${id}`);
    });

  program
    .command('dev')
    .description('start the Temporal dev server (SQLite under DATA_DIR) and every worker role; Ctrl-C stops all')
    .option('--json', 'print {"address","uiUrl","codecUrl","modelUrl"} on stdout once everything is up')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const { startLocalStack } = await import('./infra/local-stack');
      const stack = await startLocalStack(config, err);
      if (opts.json) out(JSON.stringify({ address: stack.address, uiUrl: stack.uiUrl ?? null, codecUrl: stack.codecUrl, modelUrl: stack.modelUrl ?? null }));
      err(`Temporal at ${stack.address}${stack.uiUrl ? `, Web UI at ${stack.uiUrl}` : ''}; Ctrl-C stops everything`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await stack.stop();
    });

  program
    .command('model-server')
    .description('run the local Messages API server (offline model) until Ctrl-C')
    .option('--port <n>', 'port', nonNegativeInt, 0)
    .option('--json', 'print {"url"} on stdout')
    .action(async (opts: { port: number; json?: boolean }) => {
      const { MockModelServer } = await import('./model/mock-server');
      const server = new MockModelServer();
      const url = await server.start(opts.port);
      out(opts.json ? JSON.stringify({ url }) : url);
      err(`Messages API server at ${url}; set ANTHROPIC_BASE_URL=${url}`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.stop();
    });

  program
    .command('codec-server')
    .description('run the codec endpoint (POST /encode, /decode) that lets the Web UI show encrypted histories, until Ctrl-C')
    .option('--port <n>', 'port', nonNegativeInt, 8234)
    .option('--host <addr>', 'address to listen on; a container publishes it on the host\'s loopback', '127.0.0.1')
    .option('--origin <url>', 'a browser origin allowed to call it; repeatable (default http://localhost:8233)', (v: string, acc: string[] = []) => [...acc, v])
    .option('--json', 'print {"url"} on stdout')
    .action(async (opts: { port: number; host: string; origin?: string[]; json?: boolean }) => {
      const config = loadConfig(process.env, 'codec-server');
      const { CodecServer, DEFAULT_UI_ORIGIN, parseOrigin } = await import('./codec/server');
      const { EncryptionCodec, parseCodecKeys } = await import('./codec');
      let origins: string[];
      try {
        origins = (opts.origin ?? [DEFAULT_UI_ORIGIN]).map(parseOrigin);
      } catch (e) {
        throw new CliError((e as Error).message);
      }
      const server = new CodecServer({
        codec: new EncryptionCodec(parseCodecKeys(loadCodecKey(config))),
        origins,
        token: config.CODEC_SERVER_TOKEN,
        namespaces: [config.TEMPORAL_NAMESPACE],
        log: err,
      });
      const url = await server.start(opts.port, opts.host);
      out(opts.json ? JSON.stringify({ url }) : url);
      err(`codec server at ${url} for ${origins.join(', ')}${config.CODEC_SERVER_TOKEN ? ' (bearer token required)' : ''}; start the dev server with --ui-codec-endpoint ${url}`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.stop();
    });

  addExamples(program);
  program.addHelpText('after', PROGRAM_HELP);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  program.exitOverride();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    const error = e as Error & { code?: string; exitCode?: number };
    if (error.code?.startsWith('commander.')) return error.exitCode ?? 1;
    err(`${styles(colorEnabled(process.stderr)).red('error:')} ${error.message.split('\n')[0]}`);
    return 1;
  }
}

if (require.main === module) {
  main(process.argv).then(
    (code) => process.exit(code),
    (e) => {
      err(`error: ${(e as Error).message}`);
      process.exit(1);
    },
  );
}

