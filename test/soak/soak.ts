// The soak: many sessions at once on the fault stack, with input from several clients racing long tool loops,
// handovers (continue-as-new), brain SIGKILLs and dev server restarts; then every session's log is checked for
// lost, doubled and misplaced input, gaps, doubled tool results, failed workflow tasks and sessions left stuck.
import './setup-env';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { ArchivedSessionLog, LiveSessionLog, MissingEventsError, readEvents } from '../../src/log/session-log';
import { validateRequest } from '../../src/dev/request-checks';
import type { MockStep } from '../../src/dev/model-script';
import type { SessionEvent } from '../../src/session/events';
import { BRAIN_TASK_QUEUE } from '../../src/session/queues';
import {
  endSignal,
  eventsQuery,
  resolveToolUseUpdate,
  sendMessageUpdate,
  statusQuery,
  submitToolResultUpdate,
  userMessageSignal,
  type EventsPage,
  type PendingAction,
} from '../../src/session/contract';
import { retrying } from '../faults/matrix';
import { FaultStack } from '../faults/stack';
import { toolStep } from '../helpers/actions';
import { runsOf, temporalCliPath, testAgent, testArchive, testDataConverter } from '../helpers/env';
import { OWN_DATA_DIR } from './setup-env';

export interface SoakOptions {
  sessions: number;
  /** Input stops after this many minutes, or after `messages` user messages, whichever comes first. */
  minutes?: number;
  messages?: number;
  seed: number;
  /** User messages per second, over all sessions. */
  rate: number;
  /** Brain workers; a kill takes one down for a moment while the others go on. */
  brains: number;
  /** Mean seconds between two brain SIGKILLs (0: none). */
  killEverySeconds: number;
  /** Time each kill to a handover: wait (up to 10 s) until a session's run changes, then kill at once. */
  killOnHandover: boolean;
  /** Dev server restarts, spread over the input phase. */
  restarts: number;
  /** Share of accepted messages (and answers to pending actions) sent again with the same id. */
  retryShare: number;
  /** Shares of sessions that use bash in a real sandbox, and that ask for approvals and call a client tool. */
  bashShare: number;
  actionShare: number;
  historyEvents: number;
  /** Clients that keep reading the tail of random sessions' logs (archive, then live run) while they run. */
  readers: number;
  /** How long each session may take to end its last turn once input has stopped. */
  settleSeconds: number;
  /** Where the histories of runs with a failed workflow task, and the evidence of a gap, are written. */
  failuresDir?: string;
  log?: (line: string) => void;
  /** Stops the run early (the stack is still torn down); the checks are skipped. */
  signal?: AbortSignal;
}

export const DEFAULTS: SoakOptions = {
  sessions: 6,
  seed: 1,
  rate: 1.5,
  brains: 2,
  killEverySeconds: 60,
  killOnHandover: false,
  restarts: 1,
  retryShare: 0.25,
  bashShare: 0.2,
  actionShare: 0.2,
  historyEvents: 100,
  readers: 2,
  settleSeconds: 180,
};

export interface Violation {
  session: string;
  kind:
    | 'lost'
    | 'doubled'
    | 'misplaced'
    | 'gap'
    | 'changed'
    | 'tool_results'
    | 'action'
    | 'workflow_task_failed'
    | 'stuck'
    | 'model_request_refused'
    | 'read_failed'
    | 'unreadable';
  seq?: number;
  detail: string;
}

export interface SoakFigures {
  sessions: Record<SessionKind, number>;
  minutes: number;
  messagesSent: number;
  messagesAccepted: number;
  /** Sent but never acknowledged (every attempt failed, e.g. across a restart); they may be in the log once. */
  messagesUnacknowledged: number;
  byChannel: Record<Channel, number>;
  /** Attempts beyond the first: after a failure, and on purpose after an acknowledgement. */
  retries: number;
  actionsAnswered: number;
  actionRetries: number;
  kills: number;
  restarts: number;
  /** Reads of a log's tail by the reader clients while the sessions ran. */
  reads: number;
  handovers: number;
  runs: number;
  events: number;
  modelRequests: number;
  /** Model requests whose conversation ended on an assistant turn (a prefill the current models refuse). */
  prefillRequests: number;
  /** Model calls that ended in an `error` event. */
  modelErrors: number;
  /** Handovers the server refused because input arrived meanwhile (UnhandledCommand); the next task takes it in. */
  refusedHandovers: number;
}

export interface SoakResult {
  options: SoakOptions;
  startedAt: string;
  figures: SoakFigures;
  violations: Violation[];
  saved: string[];
}

type SessionKind = 'loop' | 'bash' | 'action';
type Channel = 'update' | 'signal' | 'cli';

interface SentMessage {
  messageId: string;
  text: string;
  accepted: boolean;
  attempts: number;
  /** The seqs its updates returned. */
  seqs: number[];
}

interface Answer {
  toolUseId: string;
  kind: PendingAction['kind'];
  accepted: boolean;
  allow?: boolean;
  output?: string;
  attempts: number;
}

interface Session {
  index: number;
  id: string;
  kind: SessionKind;
  handle: WorkflowHandle;
  sent: SentMessage[];
  answers: Map<string, Answer>;
  tools: number;
  refused: string[];
}

/** mulberry32: a small seeded PRNG, so a seed repeats every random choice the soak makes. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** JSON with object keys sorted: the archive and the live query may list an event's fields in another order. */
const canonical = (v: unknown) =>
  JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
const BY = 'soak-approver';
const FORM = {
  name: 'ask_user_form',
  description: 'Asks the user a question and returns the answer.',
  input_schema: { type: 'object' as const, properties: { question: { type: 'string' } }, required: ['question'] },
};
const UNHANDLED_COMMAND = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

function agentFor(kind: SessionKind, historyEvents: number) {
  const limits = { historyEvents };
  if (kind === 'bash') return testAgent({ tools: ['bash', 'session_events'], sandboxes: { main: {} }, limits });
  if (kind === 'action')
    return testAgent({
      tools: ['session_events'],
      sandboxes: {},
      clientTools: [FORM],
      policies: { session_events: 'always_ask' },
      limits,
    });
  return testAgent({ tools: ['session_events'], sandboxes: {}, limits });
}

/** A refusal by the workflow (its validator or handler), as opposed to a call that did not get through. */
const isRefusal = (err: unknown) => err instanceof WorkflowUpdateFailedError;
const messageOf = (err: unknown) =>
  String(
    (err as Error)?.cause instanceof Error
      ? `${(err as Error).message}: ${((err as Error).cause as Error).message}`
      : ((err as Error)?.message ?? err),
  );

export async function runSoak(opts: Partial<SoakOptions> = {}): Promise<SoakResult> {
  const o: SoakOptions = { ...DEFAULTS, ...opts };
  if (o.minutes === undefined && o.messages === undefined) o.minutes = 5;
  const log = o.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const rand = prng(o.seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const startedAt = new Date().toISOString();
  const violations: Violation[] = [];
  const saved: string[] = [];
  const figures: SoakFigures = {
    sessions: { loop: 0, bash: 0, action: 0 },
    minutes: 0,
    messagesSent: 0,
    messagesAccepted: 0,
    messagesUnacknowledged: 0,
    byChannel: { update: 0, signal: 0, cli: 0 },
    retries: 0,
    actionsAnswered: 0,
    actionRetries: 0,
    kills: 0,
    restarts: 0,
    reads: 0,
    handovers: 0,
    runs: 0,
    events: 0,
    modelRequests: 0,
    prefillRequests: 0,
    modelErrors: 0,
    refusedHandovers: 0,
  };
  const stack = new FaultStack(Math.max(1, o.brains));
  const checkAborted = () => {
    if (o.signal?.aborted) throw new Error('the soak was stopped');
  };
  const started = Date.now();
  const plannedMs = o.minutes !== undefined ? o.minutes * 60_000 : (o.messages! / o.rate) * 1000;
  let inputOpen = true;
  const inFlight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    const q = p
      .catch((err) => log(`soak: internal error: ${(err as Error).stack ?? err}`))
      .finally(() => inFlight.delete(q));
    inFlight.add(q);
  };

  const sessions: Session[] = [];
  let approving = true;
  try {
    await stack.start();
    const client = stack.client;
    const cli = temporalCliPath();
    const kinds: SessionKind[] = Array.from({ length: o.sessions }, (_, i) => {
      // At least one session of each kind once there are three or more, whatever the shares round to.
      if (o.sessions >= 3 && i === 0) return 'bash';
      if (o.sessions >= 3 && i === 1) return 'action';
      const r = rand();
      return r < o.bashShare ? 'bash' : r < o.bashShare + o.actionShare ? 'action' : 'loop';
    });
    for (const [index, kind] of kinds.entries()) {
      const id = `soak-${o.seed}-${started.toString(36)}-${index}`;
      await client.workflow.start('sessionWorkflow', {
        taskQueue: BRAIN_TASK_QUEUE,
        workflowId: id,
        args: [{ agent: agentFor(kind, o.historyEvents) }],
      });
      sessions.push({
        index,
        id,
        kind,
        handle: client.workflow.getHandle(id),
        sent: [],
        answers: new Map(),
        tools: 0,
        refused: [],
      });
      figures.sessions[kind]++;
    }
    log(
      `soak: ${o.sessions} sessions (${JSON.stringify(figures.sessions)}), seed ${o.seed}, ${o.minutes !== undefined ? `${o.minutes} min` : `${o.messages} messages`} of input at ${o.rate}/s, ${o.brains} brains, a kill every ~${o.killEverySeconds} s, ${o.restarts} restart(s)`,
    );

    /** A tool loop for the model to run: session_events everywhere, bash in a sandbox, the client tool where there is one. */
    const loopFor = (s: Session, rounds: number): MockStep[] =>
      Array.from({ length: rounds }, () => {
        const id = `toolu_soak${s.index}_${++s.tools}`;
        const step =
          s.kind === 'bash' && rand() < 0.5
            ? toolStep('bash', { command: `echo ${s.tools} >> soak.txt; wc -l < soak.txt` })
            : s.kind === 'action' && rand() < 0.5
              ? toolStep('ask_user_form', { question: `question ${s.tools}?` })
              : toolStep('session_events', { from: int(1, 12), limit: 1 });
        (step.reply!.content[0] as { id?: string }).id = id;
        return step;
      });

    // --- Clients: user messages by update, signal and the temporal CLI, each retried with its messageId.
    const once = async (s: Session, m: SentMessage, channel: Channel): Promise<number | undefined> => {
      const msg = { text: m.text, messageId: m.messageId };
      if (channel === 'update') return (await s.handle.executeUpdate(sendMessageUpdate, { args: [msg] })).seq;
      if (channel === 'signal') return void (await s.handle.signal(userMessageSignal, msg));
      await new Promise<void>((resolve, reject) =>
        execFile(
          cli,
          [
            'workflow',
            'signal',
            '--address',
            stack.address,
            '--workflow-id',
            s.id,
            '--name',
            'userMessage',
            '--input',
            JSON.stringify(msg),
          ],
          { timeout: 30_000 },
          (err, _out, stderr) =>
            err ? reject(new Error(`temporal workflow signal: ${stderr.trim() || err.message}`)) : resolve(),
        ),
      );
    };
    /** Sends until one attempt is acknowledged, a refusal comes back, or two minutes have passed. */
    const deliver = async (s: Session, m: SentMessage, channel: Channel) => {
      const deadline = Date.now() + 120_000;
      for (let attempt = 1; ; attempt++) {
        m.attempts++;
        figures.byChannel[channel]++;
        if (m.attempts > 1) figures.retries++;
        try {
          const seq = await once(s, m, channel);
          if (seq !== undefined) m.seqs.push(seq);
          m.accepted = true;
          return;
        } catch (err) {
          if (isRefusal(err) || Date.now() > deadline) {
            s.refused.push(`${m.messageId} by ${channel}: ${messageOf(err)}`);
            return;
          }
          await sleep(Math.min(2000, 200 * attempt));
        }
      }
    };
    const sendMessage = async (s: Session) => {
      const n = s.sent.length + 1;
      const channel = pick<Channel>(['update', 'update', 'signal', 'signal', 'cli']);
      const m: SentMessage = {
        messageId: `${s.id}-m${n}`,
        text: `message ${n} to session ${s.index}, first sent by ${channel}`,
        accepted: false,
        attempts: 0,
        seqs: [],
      };
      s.sent.push(m);
      figures.messagesSent++;
      const again = rand() < o.retryShare;
      const retryChannel = pick<Channel>(['update', 'signal', 'cli']);
      const delay = rand() * 3000;
      await deliver(s, m, channel);
      if (m.accepted && again) {
        await sleep(delay);
        await deliver(s, m, retryChannel);
      }
    };

    // --- The approver: answers each pending approval and client tool call once, some of them twice.
    const answer = async (s: Session, a: Answer, again: boolean) => {
      for (let round = 0; round < (again ? 2 : 1); round++) {
        const deadline = Date.now() + 120_000;
        for (;;) {
          a.attempts++;
          if (a.attempts > 1) figures.actionRetries++;
          try {
            if (a.kind === 'approval')
              await s.handle.executeUpdate(resolveToolUseUpdate, {
                args: [{ toolUseId: a.toolUseId, allow: a.allow!, by: BY }],
              });
            else
              await s.handle.executeUpdate(submitToolResultUpdate, {
                args: [{ toolUseId: a.toolUseId, output: a.output! }],
              });
            if (a.accepted)
              violations.push({
                session: s.id,
                kind: 'action',
                detail: `a repeated ${a.kind} answer to ${a.toolUseId} was accepted again`,
              });
            a.accepted = true;
            break;
          } catch (err) {
            if (isRefusal(err)) {
              // Refused as already answered: an earlier attempt that seemed to fail did get through.
              if (/already (approved|denied|has a result)/.test(messageOf(err))) a.accepted = true;
              break;
            }
            if (Date.now() > deadline) break;
            await sleep(250);
          }
        }
        if (round === 0 && again) await sleep(rand() * 2000);
      }
    };
    const approver = async (s: Session) => {
      while (approving) {
        await sleep(200 + rand() * 800);
        const status = await s.handle.query(statusQuery).catch(() => undefined);
        for (const p of status?.pending ?? []) {
          if (s.answers.has(p.toolUseId)) continue;
          const a: Answer = {
            toolUseId: p.toolUseId,
            kind: p.kind,
            accepted: false,
            attempts: 0,
            ...(p.kind === 'approval' ? { allow: rand() < 0.8 } : { output: `answer to ${p.toolUseId}` }),
          };
          s.answers.set(p.toolUseId, a);
          figures.actionsAnswered++;
          track(answer(s, a, rand() < o.retryShare));
        }
      }
    };
    const approvers = sessions.filter((s) => s.kind === 'action').map((s) => approver(s));

    const untilHandover = async (s: Session, ms: number) => {
      const runOf = () =>
        s.handle.query(statusQuery).then(
          (st) => st.run ?? 1,
          () => undefined,
        );
      const first = await runOf();
      for (const end = Date.now() + ms; Date.now() < end; await sleep(50)) {
        const now = await runOf();
        if (first !== undefined && now !== undefined && now !== first) return;
      }
    };
    // --- Faults: brain SIGKILLs at random moments (restarted after a few seconds), dev server restarts.
    const restartAt = Array.from(
      { length: o.restarts },
      (_, r) => started + ((r + 0.2 + 0.6 * rand()) / o.restarts) * plannedMs,
    ).sort((a, b) => a - b);
    const faults = (async () => {
      let nextKill = o.killEverySeconds > 0 ? Date.now() + o.killEverySeconds * 1000 * (0.5 + rand()) : Infinity;
      while (inputOpen) {
        await sleep(250);
        if (restartAt.length && Date.now() >= restartAt[0]) {
          restartAt.shift();
          log(`soak: restarting the dev server (${((Date.now() - started) / 60_000).toFixed(1)} min)`);
          await stack.restartTemporal();
          figures.restarts++;
        }
        if (Date.now() >= nextKill) {
          if (o.killOnHandover) await untilHandover(pick(sessions), 10_000);
          const i = int(0, stack.brains.length - 1);
          await stack.brains[i].kill('SIGKILL');
          figures.kills++;
          await sleep(rand() * 5000);
          for (;;) {
            try {
              stack.brains[i] = await stack.spawn('brain');
              break;
            } catch (err) {
              log(`soak: brain ${i} did not start again: ${(err as Error).message.slice(0, 200)}`);
              await sleep(1000);
            }
          }
          nextKill = Date.now() + o.killEverySeconds * 1000 * (0.5 + rand());
        }
      }
    })();

    // --- The model's side: each request is read once for its shape, then its body is dropped.
    const refusedRequests = new Map<string, string[]>();
    let harvested = 0;
    const harvest = () => {
      // By each request's number: the server keeps only its latest requests, so a place in its list can shift.
      for (const r of stack.mock.requests()) {
        if (r.n <= harvested) continue;
        if (r.status === 0) break;
        harvested = r.n;
        if (r.path !== '/v1/messages') continue;
        figures.modelRequests++;
        const messages = r.body.messages as { role: string }[] | undefined;
        if (messages?.at(-1)?.role === 'assistant') figures.prefillRequests++;
        if (r.status === 400) {
          let why = 'refused';
          try {
            validateRequest(r.body);
          } catch (err) {
            why = (err as Error).message;
          }
          refusedRequests.set(r.sessionId, [...(refusedRequests.get(r.sessionId) ?? []), why]);
        }
        r.body = {};
      }
    };

    // --- Readers: the tail of a log read as a client reads it, archive first and then the live run, while handovers move
    // events from one to the other. A read that finds events in neither is a failure a user sees.
    const clientLog = new ArchivedSessionLog(testArchive(), new LiveSessionLog(client));
    const known = new Map<string, number>();
    const reader = async () => {
      while (inputOpen) {
        await sleep(100 + rand() * 400);
        const s = pick(sessions);
        const from = Math.max(0, (known.get(s.id) ?? 0) - int(0, 40));
        try {
          const got = await readEvents(clientLog, s.id, from);
          figures.reads++;
          const bad = got.findIndex((e, i) => e.seq !== from + i);
          if (bad >= 0)
            violations.push({
              session: s.id,
              kind: 'read_failed',
              seq: from + bad,
              detail: `a read from ${from} returned seq ${got[bad].seq} at position ${bad}`,
            });
          known.set(s.id, Math.max(known.get(s.id) ?? 0, from + got.length));
        } catch (err) {
          if (err instanceof MissingEventsError) {
            violations.push({
              session: s.id,
              kind: 'read_failed',
              seq: from,
              detail: `${((Date.now() - started) / 60_000).toFixed(2)} min: ${err.message}`,
            });
            log(`soak: read failed: ${err.message}`);
          }
        }
      }
    };
    const readers = Array.from({ length: o.readers }, () => reader());

    // --- Input: messages at random moments to random sessions; some also give the model a new tool loop.
    let lastProgress = Date.now();
    while (inputOpen) {
      await sleep(-Math.log(1 - rand()) * (1000 / o.rate));
      checkAborted();
      const s = pick(sessions);
      if (rand() < 0.35) stack.mock.script(s.id, { firstByteDelayMs: int(0, 150), steps: loopFor(s, int(3, 30)) });
      track(sendMessage(s));
      harvest();
      if (Date.now() - lastProgress > 30_000) {
        lastProgress = Date.now();
        log(
          `soak: ${((Date.now() - started) / 60_000).toFixed(1)} min: ${figures.messagesSent} messages sent, ${figures.kills} kills, ${figures.restarts} restarts, ${inFlight.size} calls in flight`,
        );
      }
      if (
        (o.minutes !== undefined && Date.now() - started >= o.minutes * 60_000) ||
        (o.messages !== undefined && figures.messagesSent >= o.messages)
      )
        inputOpen = false;
    }
    await Promise.all([faults, ...readers]);
    checkAborted();
    log(
      `soak: input stopped after ${((Date.now() - started) / 60_000).toFixed(1)} min; waiting for calls in flight and for every session to end its turn`,
    );
    while (inFlight.size) await Promise.all([...inFlight]);
    for (const s of sessions) stack.mock.script(s.id, { steps: [] });

    // --- Settle: every session must be waiting for the user (twice in a row) within the bound.
    const deadline = Date.now() + o.settleSeconds * 1000;
    const settled = new Set<string>();
    const seenWaiting = new Set<string>();
    while (settled.size < sessions.length && Date.now() < deadline) {
      checkAborted();
      for (const s of sessions) {
        if (settled.has(s.id)) continue;
        const st = await s.handle.query(statusQuery).catch(() => undefined);
        if (st?.state === 'waiting_for_user') {
          if (seenWaiting.has(s.id)) settled.add(s.id);
          seenWaiting.add(s.id);
        } else seenWaiting.delete(s.id);
      }
      await sleep(1000);
    }
    for (const s of sessions) {
      if (settled.has(s.id)) continue;
      const st = await s.handle.query(statusQuery).catch((err) => ({ error: messageOf(err) }));
      violations.push({
        session: s.id,
        kind: 'stuck',
        detail: `not waiting for the user ${o.settleSeconds} s after input stopped: ${JSON.stringify(st).slice(0, 400)}`,
      });
    }
    approving = false;
    await Promise.all(approvers);
    while (inFlight.size) await Promise.all([...inFlight]);
    harvest();
    figures.minutes = Number(((Date.now() - started) / 60_000).toFixed(1));

    // --- End every session (its last run seals into the archive), then check each one.
    await Promise.all(
      sessions.map(async (s) => {
        await s.handle.signal(endSignal, { reason: 'soak done' }).catch(() => undefined);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          s.handle.result().catch(() => undefined),
          new Promise((r) => (timer = setTimeout(r, 60_000))),
        ]);
        clearTimeout(timer);
      }),
    );
    for (const s of sessions) {
      const found = await checkSession(s).catch((err): Violation[] => [
        { session: s.id, kind: 'unreadable', detail: `the checks could not run: ${messageOf(err)}` },
      ]);
      violations.push(...found);
      const refused = refusedRequests.get(s.id) ?? [];
      if (refused.length)
        violations.push({
          session: s.id,
          kind: 'model_request_refused',
          detail: `${refused.length} model request(s) refused with 400, the first: ${refused[0]}`,
        });
    }
    return { options: o, startedAt, figures, violations, saved };
  } finally {
    inputOpen = false;
    approving = false;
    await stack.stop().catch((err) => log(`soak: stopping the stack: ${(err as Error).message}`));
    if (OWN_DATA_DIR) fs.rmSync(OWN_DATA_DIR, { recursive: true, force: true });
  }

  /** The whole log of a session: every sealed segment, and the live run's tail. */
  async function readLog(s: Session): Promise<{ events: Map<number, SessionEvent>; problems: Violation[] }> {
    const archive = testArchive();
    const events = new Map<number, SessionEvent>();
    const problems: Violation[] = [];
    const put = (e: SessionEvent) => {
      const had = events.get(e.seq);
      if (had && canonical(had) !== canonical(e))
        problems.push({
          session: s.id,
          kind: 'changed',
          seq: e.seq,
          detail: `the archive and the live run disagree: ${JSON.stringify(had).slice(0, 200)} vs ${JSON.stringify(e).slice(0, 200)}`,
        });
      events.set(e.seq, e);
    };
    for (const seg of await archive.segments(s.id)) {
      if (seg.kind === 'events')
        for (const e of await archive.readSegment(s.id, seg, seg.fromSeq, seg.throughSeq + 1 - seg.fromSeq)) put(e);
    }
    const query = (from: number): Promise<EventsPage> => s.handle.query(eventsQuery, { from, limit: 1000 });
    let page = await query(0);
    for (let from = page.firstSeq ?? 0; ; from = page.nextSeq) {
      page = await query(from);
      if (page.events.length === 0) break;
      page.events.forEach(put);
    }
    return { events, problems };
  }

  async function checkSession(s: Session): Promise<Violation[]> {
    const out: Violation[] = [];
    const v = (kind: Violation['kind'], detail: string, seq?: number) =>
      out.push({ session: s.id, kind, detail, ...(seq !== undefined ? { seq } : {}) });
    // Runs: handovers, and any workflow task that failed.
    const runs = await retrying(() => runsOf(stack.client, s.id), 60_000);
    figures.runs += runs.length;
    figures.handovers += runs.filter((r) => r.status.name === 'CONTINUED_AS_NEW').length;
    let runsSaved = false;
    const saveRuns = async () => {
      if (runsSaved) return;
      runsSaved = true;
      for (const [i, run] of runs.entries())
        saved.push(
          save(
            `${s.id}-run-${i + 1}.json`,
            historyToJSON(await stack.client.workflow.getHandle(s.id, run.runId).fetchHistory()),
          ),
        );
    };
    for (const [i, run] of runs.entries()) {
      const history = await retrying(() => stack.client.workflow.getHandle(s.id, run.runId).fetchHistory(), 60_000);
      let saveIt = false;
      // A handover continues at the seq after the last one it sealed: nothing is appended between the two.
      const seals = new Map<number, number>();
      let sealedThrough: number | undefined;
      for (const e of history.events ?? []) {
        const scheduled = e.activityTaskScheduledEventAttributes;
        if (scheduled?.activityType?.name === 'sealEvents')
          seals.set(Number(e.eventId), (await decoded<{ throughSeq: number }>(scheduled.input?.payloads)).throughSeq);
        const completed = e.activityTaskCompletedEventAttributes;
        if (completed && seals.has(Number(completed.scheduledEventId)))
          sealedThrough = seals.get(Number(completed.scheduledEventId));
        const continued = e.workflowExecutionContinuedAsNewEventAttributes;
        if (continued) {
          const next = (await decoded<{ continued: { nextSeq: number } }>(continued.input?.payloads)).continued.nextSeq;
          if (sealedThrough === undefined || next !== sealedThrough + 1)
            v(
              'gap',
              `run ${i + 1} handed over with nextSeq ${next}, but sealed only through ${sealedThrough}`,
              (sealedThrough ?? -1) + 1,
            );
        }
        const failed = e.workflowTaskFailedEventAttributes;
        if (!failed) continue;
        if (failed.cause === UNHANDLED_COMMAND) {
          figures.refusedHandovers++;
          continue;
        }
        const cause = temporal.api.enums.v1.WorkflowTaskFailedCause[failed.cause ?? 0] ?? String(failed.cause);
        v(
          'workflow_task_failed',
          `run ${i + 1} (${run.runId}), history event ${e.eventId}: ${cause}: ${(failed.failure?.message ?? '').slice(0, 300)}`,
        );
        saveIt = true;
      }
      if (saveIt && o.failuresDir) saved.push(save(`${s.id}-run-${i + 1}.json`, historyToJSON(history)));
    }

    let whole: Awaited<ReturnType<typeof readLog>>;
    try {
      whole = await retrying(() => readLog(s), 60_000);
    } catch (err) {
      // The runs were checked above (a failed workflow task makes a session unqueryable); the log cannot be.
      v('unreadable', messageOf(err));
      return out;
    }
    out.push(...whole.problems);
    const events = [...whole.events.values()].sort((a, b) => a.seq - b.seq);
    figures.events += events.length;

    // Gap-free from seq 0; a hole is looked for in every run, to tell where its events went.
    const last = events.at(-1)?.seq ?? -1;
    for (let seq = 0; seq <= last; seq++) {
      if (whole.events.has(seq)) continue;
      let to = seq;
      while (to + 1 <= last && !whole.events.has(to + 1)) to++;
      const heldBy: string[] = [];
      const evidence: Record<string, unknown> = { session: s.id, missing: [seq, to], runs: [] as unknown[] };
      for (const [i, run] of runs.entries()) {
        const page = await stack.client.workflow
          .getHandle(s.id, run.runId)
          .query(eventsQuery, { from: Math.max(0, seq - 5), limit: to - seq + 10 })
          .catch((err) => ({ error: messageOf(err) }) as unknown as EventsPage);
        (evidence.runs as unknown[]).push({
          run: i + 1,
          runId: run.runId,
          status: run.status.name,
          firstSeq: page.firstSeq,
          events: page.events,
        });
        if (page.events?.some((e) => e.seq >= seq && e.seq <= to)) heldBy.push(`run ${i + 1}`);
      }
      const around = events.filter((e) => e.seq >= seq - 3 && e.seq <= to + 3).map((e) => `${e.seq} ${e.type}`);
      v(
        'gap',
        `events ${seq} to ${to} are in neither the archive nor the live run${heldBy.length ? `; held only in the state of ${heldBy.join(', ')}` : ''}; around it: ${around.join(', ')}`,
        seq,
      );
      if (o.failuresDir) {
        saved.push(save(`${s.id}-gap-${seq}.json`, JSON.stringify(evidence, null, 1)));
        await saveRuns();
      }
      seq = to;
    }
    // An event the archive holds in another version than the live run: the histories show which task wrote which.
    if (o.failuresDir && whole.problems.length) await saveRuns();

    // Every accepted message exactly once (a retried messageId dropped), at the seq its updates returned.
    const byId = new Map<string, SessionEvent[]>();
    for (const e of events)
      if (e.type === 'user_message' && e.messageId) byId.set(e.messageId, [...(byId.get(e.messageId) ?? []), e]);
    for (const m of s.sent) {
      const found = byId.get(m.messageId) ?? [];
      if (m.accepted && found.length === 0)
        v('lost', `${m.messageId} (${m.attempts} attempt(s)) was acknowledged but is not in the log`);
      if (found.length > 1)
        v(
          'doubled',
          `${m.messageId} is in the log ${found.length} times, at ${found.map((e) => e.seq).join(', ')} (${m.attempts} attempts)`,
          found[1].seq,
        );
      for (const seq of new Set(m.seqs)) {
        if (!found.some((e) => e.seq === seq))
          v(
            'misplaced',
            `an update for ${m.messageId} returned seq ${seq}, where the log has ${JSON.stringify(whole.events.get(seq)?.type)}`,
            seq,
          );
      }
      if (m.accepted) figures.messagesAccepted++;
      else figures.messagesUnacknowledged++;
    }

    // Each tool call once, with exactly one result; each answer to a pending action recorded once.
    const uses = new Map<string, number>();
    const results = new Map<string, SessionEvent[]>();
    const decisions = new Map<string, SessionEvent[]>();
    for (const e of events) {
      if (e.type === 'tool_use') uses.set(e.id, (uses.get(e.id) ?? 0) + 1);
      if (e.type === 'tool_result') results.set(e.toolUseId, [...(results.get(e.toolUseId) ?? []), e]);
      if (e.type === 'approval_resolved') decisions.set(e.toolUseId, [...(decisions.get(e.toolUseId) ?? []), e]);
      if (e.type === 'error' && e.kind === 'model') figures.modelErrors++;
    }
    for (const [id, n] of uses) {
      const r = results.get(id) ?? [];
      if (n > 1) v('tool_results', `tool_use ${id} is in the log ${n} times`);
      if (r.length !== 1)
        v(
          'tool_results',
          `tool_use ${id} has ${r.length} results${r.length ? ` (at ${r.map((e) => e.seq).join(', ')})` : ''}`,
          r[1]?.seq,
        );
    }
    for (const a of s.answers.values()) {
      if (!a.accepted) continue;
      if (a.kind === 'approval') {
        const d = (decisions.get(a.toolUseId) ?? []).filter((e) => e.type === 'approval_resolved' && e.by === BY);
        if (d.length !== 1)
          v('action', `the approval of ${a.toolUseId} was accepted, and the log has ${d.length} decisions by ${BY}`);
      } else {
        const r = (results.get(a.toolUseId) ?? []).filter((e) => e.type === 'tool_result' && e.output === a.output);
        if (r.length !== 1)
          v('action', `the result submitted for ${a.toolUseId} was accepted, and the log has it ${r.length} times`);
      }
    }
    for (const [id, d] of decisions)
      if (d.length > 1)
        v('action', `${id} was decided ${d.length} times, at ${d.map((e) => e.seq).join(', ')}`, d[1].seq);
    return out;
  }

  /** The first argument of a recorded activity input or workflow input, decoded by the test codec. */
  async function decoded<T>(payloads: Payload[] | null | undefined): Promise<T> {
    let p = payloads ?? [];
    for (const codec of [...(testDataConverter().payloadCodecs ?? [])].reverse()) p = await codec.decode(p);
    return defaultPayloadConverter.fromPayload(p[0]) as T;
  }

  function save(name: string, text: string): string {
    fs.mkdirSync(o.failuresDir!, { recursive: true });
    const file = path.join(o.failuresDir!, name);
    fs.writeFileSync(file, text);
    return file;
  }
}

/** What the soak did and found, as printed and as written to docs/soak.md. */
export function formatSoak(r: SoakResult, commit = ''): string {
  const f = r.figures;
  const o = r.options;
  const kinds = Object.entries(f.sessions)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  const byKind = new Map<string, number>();
  for (const v of r.violations) byKind.set(v.kind, (byKind.get(v.kind) ?? 0) + 1);
  const lines = [
    '# Soak',
    '',
    `Generated by \`npm run soak\` (\`test/soak/run.ts\`)${commit ? ` at commit ${commit}` : ''}, ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC.`,
    '',
    `Settings: ${o.sessions} sessions (${kinds}), seed ${o.seed}, ${o.minutes !== undefined ? `${o.minutes} min` : `${o.messages} messages`} of input at ${o.rate} messages/s, ` +
      `${o.brains} brain workers, a brain SIGKILL every ~${o.killEverySeconds} s${o.killOnHandover ? ' (each timed to a handover)' : ''}, ${o.readers} log reader(s), ${o.restarts} dev server restart(s), ${Math.round(o.retryShare * 100)}% of messages and answers sent again with the same id, ` +
      `\`limits.historyEvents: ${o.historyEvents}\`.`,
    '',
    '## What it did',
    '',
    '| figure | value |',
    '|---|---|',
    `| run time (input, settling, checks) | ${f.minutes} min |`,
    `| user messages sent / acknowledged / never acknowledged | ${f.messagesSent} / ${f.messagesAccepted} / ${f.messagesUnacknowledged} |`,
    `| attempts by channel (update / signal / temporal CLI signal) | ${f.byChannel.update} / ${f.byChannel.signal} / ${f.byChannel.cli} |`,
    `| retries with the same messageId | ${f.retries} |`,
    `| approvals and client tool results answered / retried | ${f.actionsAnswered} / ${f.actionRetries} |`,
    `| brain SIGKILLs / dev server restarts | ${f.kills} / ${f.restarts} |`,
    `| reads of a log's tail while the sessions ran | ${f.reads} |`,
    `| handovers (continue-as-new) / runs | ${f.handovers} / ${f.runs} |`,
    `| handovers the server refused as input arrived (UnhandledCommand, retried by the next task) | ${f.refusedHandovers} |`,
    `| events in all logs | ${f.events} |`,
    `| model requests / ending on an assistant turn / ending in an error event | ${f.modelRequests} / ${f.prefillRequests} / ${f.modelErrors} |`,
    '',
    '## What it found',
    '',
    r.violations.length === 0
      ? 'No violations: every acknowledged message once, every retry dropped, gap-free logs, one result per tool call, no failed workflow task, no session stuck.'
      : `${r.violations.length} violation(s): ${[...byKind].map(([k, n]) => `${n} ${k}`).join(', ')}.`,
    '',
    ...r.violations
      .slice(0, 200)
      .map((v) => `- **${v.kind}** ${v.session}${v.seq !== undefined ? ` seq ${v.seq}` : ''}: ${v.detail}`),
    ...(r.violations.length > 200 ? [`- ... and ${r.violations.length - 200} more`] : []),
    ...(r.saved.length
      ? ['', 'Saved for replay and study:', '', ...[...new Set(r.saved)].map((f) => `- \`${f}\``)]
      : []),
    '',
  ];
  return lines.join('\n');
}
