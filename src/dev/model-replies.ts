// The local server's built-in replies: a summariser for compaction calls and a brain that is deterministic in the conversation.
import { COMPACTION_MARKER } from '../session/context-builder';
import { JUDGE_MARKER, judgedCall, offlineJudgement } from '../session/judge';
import { GRADER_MARKER, gradedParts, offlineVerdict } from '../session/outcome-grading';
import { blocksOf, combineTurns, type Msg } from './request-checks';
import type { MockBlock } from './model-script';
import { lostToInfrastructure } from '../session/model-sentences';

function systemText(body: Record<string, unknown>): string {
  const system = body.system;
  if (typeof system === 'string') return system;
  if (Array.isArray(system)) return (system as { text?: string }[]).map((b) => b.text ?? '').join('\n');
  return '';
}

export function isCompactionRequest(body: Record<string, unknown>): boolean {
  return systemText(body).includes(COMPACTION_MARKER);
}

/** A judge call of the `auto` policy (src/session/judge.ts). */
export function isJudgeRequest(body: Record<string, unknown>): boolean {
  return systemText(body).startsWith(JUDGE_MARKER);
}

/**
 * Where the steps for a session's judge calls are scripted (`script(judgeScriptKey(id), ...)`): judge calls take
 * them, and leave the session's own script alone. With none left, the built-in judge answers.
 */
export const judgeScriptKey = (sessionId: string) => `judge:${sessionId}`;

/** The built-in judge: ASK for a call that matches a pattern a careful reviewer stops (OFFLINE_JUDGE_FLAGS), else ALLOW. */
export function judgeReply(body: Record<string, unknown>): { content: MockBlock[]; stopReason: string } {
  const text = blocksOf((body.messages as Msg[])[0])
    .map((b) => String(b.text ?? ''))
    .join('\n');
  const call = judgedCall(text);
  const answer = call ? offlineJudgement(call) : 'DECISION: ASK\nREASON: the request names no tool call.';
  return { content: [{ type: 'text', text: answer }], stopReason: 'end_turn' };
}

/** A grader call of an outcome (src/session/outcome-grading.ts). */
export function isGraderRequest(body: Record<string, unknown>): boolean {
  return systemText(body).startsWith(GRADER_MARKER);
}

/**
 * Where the steps for a session's grader calls are scripted (`script(graderScriptKey(id), ...)`): grader calls take
 * them, and leave the session's own script alone. With none left, the built-in grader answers.
 */
export const graderScriptKey = (sessionId: string) => `grader:${sessionId}`;

/** The built-in grader: every "quoted" phrase of the rubric must be in what the agent wrote (offlineVerdict). */
export function graderReply(body: Record<string, unknown>): { content: MockBlock[]; stopReason: string } {
  const text = blocksOf((body.messages as Msg[])[0])
    .map((b) => String(b.text ?? ''))
    .join('\n');
  const parts = gradedParts(text);
  const answer = parts
    ? offlineVerdict(parts)
    : 'VERDICT: FAILED\nEXPLANATION: the request holds no rubric and transcript to grade.';
  return { content: [{ type: 'text', text: answer }], stopReason: 'end_turn' };
}

/** The built-in summariser: lists the user requests and counts the tool calls of the transcript, citing event numbers. */
export function compactionReply(body: Record<string, unknown>): { content: MockBlock[]; stopReason: string } {
  const text = blocksOf((body.messages as Msg[])[0])
    .map((b) => String(b.text ?? ''))
    .join('\n');
  const previous = /<summary>\n([\s\S]*?)\n<\/summary>/.exec(text)?.[1];
  const range = /^Events (\d+) to (\d+):/m.exec(text);
  const asks = [...text.matchAll(/^\[(\d+)\] user: (.*)$/gm)].map((m) => `[${m[1]}] ${m[2].slice(0, 80)}`);
  const calls = [...text.matchAll(/^\[(\d+)\] tool call (\S+)/gm)];
  const lines = [
    ...(previous ? [previous] : []),
    `Events ${range?.[1] ?? '?'} to ${range?.[2] ?? '?'}: the user asked ${asks.length ? asks.slice(-20).join('; ') : 'nothing new'}; ${calls.length} tool call(s)${calls.length ? ` (${[...new Set(calls.map((c) => c[2]))].join(', ')})` : ''}.`,
  ];
  return { content: [{ type: 'text', text: lines.join('\n').slice(-4000) }], stopReason: 'end_turn' };
}

/**
 * The built-in brain: deterministic in the conversation. A user text that asks about the log, events or
 * history gets a `session_events` call, and one with a `backticked command` gets a `bash` call (when those
 * tools are offered); with `reissueLostTools`, a tool call whose sandbox was lost is made again; other tool
 * results get a short summary; anything else is echoed.
 */
export function defaultReply(
  body: Record<string, unknown>,
  opts: { reissueLostTools?: boolean } = {},
): { content: MockBlock[]; stopReason: string } {
  const messages = combineTurns(body.messages as Msg[]);
  const last = messages[messages.length - 1];
  const blocks = blocksOf(last);
  const texts = blocks.filter((b) => b.type === 'text').map((b) => b.text as string);
  const results = blocks.filter((b) => b.type === 'tool_result');
  const tools = ((body.tools as { name: string }[] | undefined) ?? []).map((t) => t.name);
  const lastText = texts[texts.length - 1];
  if (lastText !== undefined && /\b(log|events|history)\b/i.test(lastText) && tools.includes('session_events')) {
    return {
      content: [
        { type: 'text', text: 'Let me read the session log.' },
        { type: 'tool_use', name: 'session_events', input: { from: 0, limit: 20 } },
      ],
      stopReason: 'tool_use',
    };
  }
  const command = lastText === undefined ? undefined : /`([^`]+)`/.exec(lastText)?.[1];
  if (command !== undefined && tools.includes('bash')) {
    return {
      content: [
        { type: 'text', text: 'I will run that in my sandbox.' },
        { type: 'tool_use', name: 'bash', input: { command } },
      ],
      stopReason: 'tool_use',
    };
  }
  if (lastText !== undefined)
    return { content: [{ type: 'text', text: `You said: ${lastText}` }], stopReason: 'end_turn' };
  // A tool call lost to broken infrastructure (not a failing command) is made again, as a careful model would.
  const lost = results
    .filter((r) => r.is_error === true && lostToInfrastructure(JSON.stringify(r.content)))
    .map((r) => r.tool_use_id);
  const previous = messages.length >= 2 ? blocksOf(messages[messages.length - 2]) : [];
  const again = opts.reissueLostTools ? previous.filter((b) => b.type === 'tool_use' && lost.includes(b.id)) : [];
  if (again.length) {
    return {
      content: [
        { type: 'text', text: 'The sandbox failed; running that again.' },
        ...again.map((b) => ({
          type: 'tool_use' as const,
          name: String(b.name),
          input: b.input as Record<string, unknown>,
        })),
      ],
      stopReason: 'tool_use',
    };
  }
  const summary = results
    .map((r) => {
      const c = r.content;
      const text = typeof c === 'string' ? c : JSON.stringify(c);
      let count = '';
      try {
        const parsed = JSON.parse(text) as { events?: unknown[] };
        if (Array.isArray(parsed.events)) count = ` (${parsed.events.length} events)`;
      } catch {
        // not JSON: summarised by length only
      }
      const gist = count ? '' : `: ${text.split('\n').slice(0, 3).join(' | ').slice(0, 200)}`;
      return `${r.is_error ? 'an error' : 'a result'} of ${text.length} characters${count}${gist}`;
    })
    .join(', ');
  return { content: [{ type: 'text', text: `The tool returned ${summary}.` }], stopReason: 'end_turn' };
}
