// One line of the conversation: a message, a tool call with its input and result (long output folded), a marker
// or an error; calls waiting on the user carry their controls (Allow / Deny, or a custom tool's result form).
import { Component, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { folded } from './formatters';
import type { CallItem, Item } from './timeline';

export interface Steer {
  confirm(call: CallItem, allow: boolean, reason: string): Promise<boolean>;
  answer(call: CallItem, text: string, isError: boolean): Promise<boolean>;
}

function Folded(props: { text: string; label: string }) {
  const [open, setOpen] = useState(false);
  const fold = folded(props.text);
  if (!fold) return <pre class="output">{props.text}</pre>;
  return (
    <div class="folded">
      <pre class="output">{open ? props.text : `${fold.head}\n…`}</pre>
      <button type="button" class="quiet small" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? `Fold ${props.label}` : `Show all ${fold.lines} lines of ${props.label}`}
      </button>
    </div>
  );
}

function inputText(call: CallItem): string {
  if (call.name === 'bash' && typeof call.input.command === 'string' && Object.keys(call.input).length === 1)
    return `$ ${call.input.command}`;
  return JSON.stringify(call.input, null, 2);
}

/**
 * A control that waits on the user is scrolled into view when it appears, clear of the sticky composer and bar
 * (their heights are the root's scroll padding), so its buttons are never under them.
 */
function useShown<T extends HTMLElement>() {
  const ref = useRef<T>(null);
  useEffect(() => {
    // After the frame's layout, by which the page has measured the composer.
    const frame = requestAnimationFrame(() => ref.current?.scrollIntoView({ block: 'nearest' }));
    return () => cancelAnimationFrame(frame);
  }, []);
  return ref;
}

function Confirm(props: { call: CallItem; steer: Steer }) {
  const shown = useShown<HTMLDivElement>();
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const go = async (allow: boolean) => {
    setBusy(true);
    if (!(await props.steer.confirm(props.call, allow, reason))) setBusy(false);
  };
  const id = `reason-${props.call.id}`;
  return (
    <div ref={shown} class="action" role="group" aria-label={`Confirm ${props.call.name}`}>
      <p class="waiting">Waiting for your approval.</p>
      <label for={id}>Reason (optional)</label>
      <input
        id={id}
        value={reason}
        onInput={(e) => setReason(e.currentTarget.value)}
        placeholder="Told to the agent with a denial"
      />
      <div class="buttons">
        <button type="button" disabled={busy} onClick={() => void go(true)}>
          Allow
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => void go(false)}>
          Deny
        </button>
      </div>
    </div>
  );
}

function Answer(props: { call: CallItem; steer: Steer }) {
  const [text, setText] = useState('');
  const [isError, setIsError] = useState(false);
  const [busy, setBusy] = useState(false);
  const id = `result-${props.call.id}`;
  const shown = useShown<HTMLFormElement>();
  return (
    <form
      ref={shown}
      class="action"
      aria-label={`Answer ${props.call.name}`}
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        if (!(await props.steer.answer(props.call, text, isError))) setBusy(false);
      }}
    >
      <p class="waiting">Waiting for your result of this custom tool.</p>
      <label for={id}>Result</label>
      <textarea id={id} rows={3} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <label class="check">
        <input type="checkbox" checked={isError} onChange={(e) => setIsError(e.currentTarget.checked)} /> Report as an
        error
      </label>
      <div class="buttons">
        <button type="submit" disabled={busy}>
          Send result
        </button>
      </div>
    </form>
  );
}

const KIND_LABEL = { tool: 'Tool call', mcp: 'MCP tool call', custom: 'Custom tool call' } as const;

function Call(props: { call: CallItem; waiting: boolean; steer: Steer }) {
  const c = props.call;
  const name = c.server ? `${c.server} · ${c.name}` : c.name;
  return (
    <>
      <div class="meta">
        <span class="tag">{KIND_LABEL[c.call]}</span> <strong>{name}</strong>
        {c.confirmation && (
          <span class={`verdict verdict-${c.confirmation.result}`}>
            {c.confirmation.result === 'allow'
              ? 'allowed'
              : `denied${c.confirmation.message ? `: ${c.confirmation.message}` : ''}`}
          </span>
        )}
      </div>
      <Folded text={inputText(c)} label="the input" />
      {c.result && (
        <div class={c.result.isError ? 'result is-error' : 'result'}>
          <div class="meta">{c.result.isError ? 'Error result' : 'Result'}</div>
          <Folded text={c.result.text} label="the output" />
        </div>
      )}
      {props.waiting &&
        !c.result &&
        (c.call === 'custom' ? <Answer call={c} steer={props.steer} /> : <Confirm call={c} steer={props.steer} />)}
    </>
  );
}

function Row(props: { class: string; label: string; children: ComponentChildren }) {
  return (
    <li class={`item ${props.class}`} aria-label={props.label}>
      {props.children}
    </li>
  );
}

export function ItemView(props: { item: Item; waiting: boolean; steer: Steer }) {
  const it = props.item;
  switch (it.kind) {
    case 'user':
    case 'agent':
      return (
        <Row class={it.kind} label={it.kind === 'user' ? 'User message' : 'Agent message'}>
          <div class="meta">{it.kind === 'user' ? 'User' : 'Agent'}</div>
          <Folded text={it.text} label="the message" />
        </Row>
      );
    case 'call':
      return (
        <Row class={`call${props.waiting ? ' is-waiting' : ''}`} label={`${KIND_LABEL[it.call]} ${it.name}`}>
          <Call call={it} waiting={props.waiting} steer={props.steer} />
        </Row>
      );
    case 'marker':
      return (
        <Row class={it.tone ? `marker marker-${it.tone}` : 'marker'} label={it.text}>
          {it.text}
          {it.detail && <span class="marker-detail">{it.detail}</span>}
        </Row>
      );
    case 'error':
      return (
        <Row class="error-item" label="Session error">
          <div class="meta">
            Error <span class="tag">{it.errorType}</span> <span class="tag">retry: {it.retry}</span>
          </div>
          <Folded text={it.message} label="the error" />
        </Row>
      );
    default:
      return (
        <Row class="marker" label={it.type}>
          {it.type}
        </Row>
      );
  }
}

/**
 * An item that renders again only when it changed: the timeline replaces a changed item's object, so a long session
 * re-renders the one call that got its result, not its thousand neighbours.
 */
export class StableItem extends Component<{ item: Item; waiting: boolean; steer: Steer }> {
  override shouldComponentUpdate(next: { item: Item; waiting: boolean }): boolean {
    return next.item !== this.props.item || next.waiting !== this.props.waiting;
  }

  override render() {
    return <ItemView {...this.props} />;
  }
}
