// One session, live: its events listed once and then followed on the SSE stream (fetch with the key in a header),
// with the steering controls. Every action is a POST /v1/sessions/{id}/events, as any other client sends it.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, call, followStream, listAll } from './api';
import { isSelfHosted } from './environments';
import { SessionFiles } from './files-panel';
import { tokens } from './formatters';
import { StableItem, type Steer } from './items';
import { Timeline, idleReason, type ApiEvent } from './timeline';
import { environmentPath, Link as PageLink } from './router';
import type { Environment, Session, SessionThread } from './types';
import { Outcomes, Spending, ThreadLog, ThreadTabs, WorkspaceSnapshots } from './session-panels';
import { modelOf } from './types';
import { Alert, StatusBadge } from './ui';

const RECONNECT_MS = 1000;

type Link = 'connecting' | 'live' | 'reconnecting' | 'ended';

export function SessionPage(props: { id: string }) {
  const timeline = useMemo(() => new Timeline(), [props.id]);
  const [, setVersion] = useState(0);
  const [session, setSession] = useState<Session>();
  const [environment, setEnvironment] = useState<Environment>();
  const [missing, setMissing] = useState<string>();
  const [link, setLink] = useState<Link>('connecting');
  const [error, setError] = useState<string>();
  const [message, setMessage] = useState('');
  const [sending, setSending] = useState(false);
  const [threads, setThreads] = useState<SessionThread[]>([]);
  const [thread, setThread] = useState<string>();
  const path = `/v1/sessions/${encodeURIComponent(props.id)}`;
  const composer = useRef<HTMLFormElement>(null);

  // The sticky composer and bar cover the page's edges: their heights become its scroll padding (style.css).
  useEffect(() => {
    const root = document.documentElement.style;
    const bar = document.querySelector<HTMLElement>('.bar');
    const measure = () => {
      root.setProperty('--composer-height', `${composer.current?.offsetHeight ?? 0}px`);
      if (bar) root.setProperty('--bar-height', `${bar.offsetHeight}px`);
    };
    const observer = new ResizeObserver(measure);
    if (composer.current) observer.observe(composer.current);
    if (bar) observer.observe(bar);
    measure();
    return () => {
      observer.disconnect();
      root.removeProperty('--composer-height');
    };
  }, []);

  useEffect(() => {
    const abort = new AbortController();
    const bump = () => setVersion((v) => v + 1);
    const loadThreads = () =>
      listAll<SessionThread>(`${path}/threads`).then(
        (t) => !abort.signal.aborted && setThreads(t),
        () => undefined,
      );
    const load = () => {
      void loadThreads();
      return call<Session>('GET', path).then(setSession, (e: unknown) => {
        if (e instanceof ApiError && e.status === 404) setMissing(e.message);
      });
    };
    void load();
    /** One connection: the stream first, then the list, which then holds everything the stream will not send. */
    const attempt = async () => {
      const conn = new AbortController();
      const stop = () => conn.abort();
      abort.signal.addEventListener('abort', stop);
      let listed = false;
      const early: ApiEvent[] = [];
      let listing: Promise<void> = Promise.resolve();
      try {
        await followStream(
          props.id,
          conn.signal,
          () => {
            listing = listAll<ApiEvent>(`${path}/events`).then(
              (events) => {
                timeline.push(events);
                timeline.push(early);
                listed = true;
                setLink('live');
                bump();
                // An ended session's stream has nothing more to send.
                if (timeline.status === 'terminated') conn.abort();
              },
              () => conn.abort(),
            );
          },
          (e) => {
            const ev = e as ApiEvent;
            if (!listed) return void early.push(ev);
            if (timeline.push([ev])) bump();
            if (ev.type.startsWith('session.status') || ev.type.startsWith('span.outcome_evaluation_end')) void load();
            else if (ev.type.startsWith('session.thread_')) void loadThreads();
          },
        );
      } catch (e) {
        if (e instanceof ApiError && (e.status === 404 || e.status === 401)) throw e;
      } finally {
        abort.signal.removeEventListener('abort', stop);
        await listing;
      }
    };
    const follow = async () => {
      while (!abort.signal.aborted) {
        try {
          await attempt();
        } catch (e) {
          // Not found (or another workspace's), or signed out: nothing to follow.
          if (e instanceof ApiError && e.status === 404) setMissing(e.message);
          return;
        }
        if (abort.signal.aborted) return;
        if (timeline.status === 'terminated') {
          setLink('ended');
          void load();
          return;
        }
        setLink('reconnecting');
        await new Promise((r) => setTimeout(r, RECONNECT_MS));
      }
    };
    void follow();
    return () => abort.abort();
  }, [props.id]);

  // Where the session's tools run: a self-hosted environment's page shows its queue and workers.
  const environmentId = session?.environment_id;
  useEffect(() => {
    if (!environmentId) return;
    let live = true;
    call<Environment>('GET', `/v1/environments/${encodeURIComponent(environmentId)}`).then(
      (e) => live && setEnvironment(e),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [environmentId]);

  const send = async (events: unknown[]): Promise<boolean> => {
    setError(undefined);
    try {
      await call('POST', `${path}/events`, { events });
      return true;
    } catch (e) {
      setError((e as Error).message);
      return false;
    }
  };
  const steer: Steer = {
    confirm: (c, allow, reason) =>
      send([
        {
          type: 'user.tool_confirmation',
          tool_use_id: c.id,
          result: allow ? 'allow' : 'deny',
          ...(!allow && reason.trim() ? { deny_message: reason.trim() } : {}),
        },
      ]),
    answer: (c, text, isError) =>
      send([
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: c.id,
          content: text ? [{ type: 'text', text }] : [],
          is_error: isError,
        },
      ]),
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    const text = message.trim();
    if (!text) return;
    setSending(true);
    if (await send([{ type: 'user.message', content: [{ type: 'text', text }] }])) setMessage('');
    setSending(false);
  };

  if (missing) {
    return (
      <main class="page">
        <h1>Session not found</h1>
        <Alert message={missing} />
      </main>
    );
  }
  const status = timeline.status !== 'unknown' ? timeline.status : (session?.status ?? 'unknown');
  const ended = status === 'terminated' || session?.archived_at != null;
  const busy = status === 'running' || timeline.stopReason === 'requires_action';
  const usage = session?.usage;
  const shownThread = thread === undefined ? undefined : threads.find((t) => t.id === thread);
  return (
    <main class="page session">
      <div class="page-head">
        <div>
          <h1>{session?.title || props.id}</h1>
          <p class="sub">
            <span class="id">{props.id}</span>
            {session && (
              <>
                {' · '}
                {session.agent.name} <span class="version">v{session.agent.version}</span> · {modelOf(session.agent)}
              </>
            )}
          </p>
          {environment && isSelfHosted(environment) && (
            <p class="sub">
              Its tools run on the self-hosted environment{' '}
              <PageLink href={environmentPath(environment.id)}>{environment.name}</PageLink>, through its work queue.
            </p>
          )}
        </div>
        <div class="head-status">
          <StatusBadge
            status={status}
            detail={status === 'idle' ? idleReason(timeline.stopReason, timeline.waiting.size) : undefined}
          />
          {usage && (
            <span class="usage" title="Input (with cache reads) and output tokens">
              {tokens(usage.input_tokens + usage.cache_read_input_tokens)} in ·{' '}
              {tokens(Math.max(usage.output_tokens, timeline.outputTokens))} out
            </span>
          )}
          <span class={`link link-${link}`} aria-live="polite">
            {link === 'live' ? 'live' : link}
          </span>
        </div>
      </div>
      {session && <Spending session={session} />}
      <Outcomes evaluations={session?.outcome_evaluations ?? []} grades={timeline.grades} />
      <SessionFiles sessionId={props.id} resources={session?.resources} settled={timeline.settles} />
      <WorkspaceSnapshots snapshots={timeline.snapshots} restores={timeline.restores} />
      <ThreadTabs threads={threads} selected={shownThread?.id} onSelect={setThread} />
      {shownThread ? (
        <ThreadLog key={shownThread.id} sessionId={props.id} thread={shownThread} steer={steer} />
      ) : (
        <ol class="log" aria-label="Session events" aria-busy={link === 'connecting'} data-events={timeline.size}>
          {timeline.items.map((it) => (
            <StableItem key={it.id} item={it} waiting={timeline.waiting.has(it.id)} steer={steer} />
          ))}
        </ol>
      )}
      {link !== 'connecting' && timeline.items.length === 0 && (
        <p class="empty">No events yet: send the first message.</p>
      )}
      <form ref={composer} class="composer" onSubmit={submit}>
        <label for="message">Message</label>
        <textarea
          id="message"
          rows={3}
          value={message}
          disabled={ended}
          placeholder={ended ? 'This session has ended.' : 'Write to the agent (Ctrl+Enter sends)'}
          onInput={(e) => setMessage(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void submit(e);
          }}
        />
        <div class="buttons">
          {busy && !ended && (
            <button type="button" class="danger" onClick={() => void send([{ type: 'user.interrupt' }])}>
              Interrupt
            </button>
          )}
          <button type="submit" disabled={sending || ended || !message.trim()}>
            Send
          </button>
        </div>
        <Alert message={error} />
      </form>
    </main>
  );
}
