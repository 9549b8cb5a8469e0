// Scripted replies for the local server: the steps a session's script holds (faults, delays, gates, replies),
// consumed in order, and the gates that hold a response until they are released. The in-process scripted model
// of the tests (test/helpers/scripted-model.ts) shares the reply blocks, their completion and the gates.

export interface MockBlockText {
  type: 'text';
  text: string;
}
export interface MockBlockToolUse {
  type: 'tool_use';
  id?: string;
  name: string;
  input: Record<string, unknown>;
}
/** Extended thinking, streamed as the API does: `thinking_delta`s, then a `signature_delta`. */
export interface MockBlockThinking {
  type: 'thinking';
  thinking: string;
  signature?: string;
}
export type MockBlock = MockBlockText | MockBlockToolUse | MockBlockThinking;

/** One scripted response. Faults take precedence over `reply`; with neither, the built-in brain answers. */
/** Token counts a scripted reply reports instead of the server's own accounting. */
export interface MockUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

export interface MockStep {
  /** Respond with this HTTP error status (e.g. 429, 500, 529, 400). */
  status?: number;
  /** Seconds for the `retry-after` header of an error response. */
  retryAfter?: number;
  /** Error message for an error response. */
  message?: string;
  /** Wait this long before the first byte. */
  firstByteDelayMs?: number;
  /** Hold the response (before its first byte) until `release(gate)` is called. */
  gate?: string;
  /** Stream the first half of each text block, then hold the rest until `release(midGate)` is called. */
  midGate?: string;
  /** Start the reply, then drop the connection mid-stream. */
  dropMidStream?: boolean;
  /** Start the reply, then send an SSE `error` event of this status's type (as the API does when it overloads mid-stream). */
  errorMidStream?: number;
  /** Wait this long after each streamed content delta. */
  chunkDelayMs?: number;
  /** `usage` replaces the reply's token counts (the Messages API's fields), e.g. to give a call a known list cost. */
  reply?: { content: MockBlock[]; stopReason?: string; usage?: MockUsage };
  /** Answer 200 with this body as the event stream, verbatim: malformed SSE, arbitrary content blocks. */
  rawSse?: string;
}

export interface MockSessionScript {
  steps?: MockStep[];
  /** Applied to every response of the session that has no delay of its own. */
  firstByteDelayMs?: number;
  /** Applied to every streamed response of the session that has no chunk delay of its own. */
  chunkDelayMs?: number;
  /** This session's model allows prefill (default: the server's `allowPrefill`). */
  allowPrefill?: boolean;
}

/** A scripted reply with every tool_use given an id (`toolu_mock_<message count>_<index>` unless set) and its stop reason. */
export function completeReply(
  reply: { content: MockBlock[]; stopReason?: string },
  messageCount: number,
): { content: MockBlock[]; stopReason: string } {
  const content = reply.content.map((b, i) =>
    b.type === 'tool_use'
      ? { ...b, id: b.id ?? `toolu_mock_${messageCount}_${i}` }
      : b.type === 'thinking'
        ? { ...b, signature: b.signature ?? `sig_mock_${messageCount}_${i}` }
        : b,
  );
  return {
    content,
    stopReason: reply.stopReason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'),
  };
}

/** Named gates: a response held at one waits until it is released; once released, a gate stays open. */
export class Gates {
  private readonly gates = new Map<string, { opened: Promise<void>; open: () => void }>();

  private gate(name: string) {
    let g = this.gates.get(name);
    if (!g) {
      let open!: () => void;
      const opened = new Promise<void>((resolve) => (open = resolve));
      g = { opened, open };
      this.gates.set(name, g);
    }
    return g;
  }

  /** Resolves once `gate` is released. */
  opened(gate: string): Promise<void> {
    return this.gate(gate).opened;
  }

  /** Lets every response held at `gate` go on, and any later one pass straight through. */
  release(gate: string): void {
    this.gate(gate).open();
  }
}

/** The scripts of the sessions, keyed by `metadata.user_id`, and the gates their steps wait at. */
export class MockScripts extends Gates {
  private readonly scripts = new Map<string, MockSessionScript>();

  set(sessionId: string, script: MockSessionScript): void {
    this.scripts.set(sessionId, { ...script, steps: [...(script.steps ?? [])] });
  }

  get(sessionId: string): MockSessionScript | undefined {
    return this.scripts.get(sessionId);
  }

  /** Consumes the session's next step; an empty step when its script has none left (or it has no script). */
  next(sessionId: string): MockStep {
    return this.scripts.get(sessionId)?.steps?.shift() ?? {};
  }
}
