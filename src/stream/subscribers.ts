// Listeners per session, as the worker's hubs keep them: added on subscribe, gone with their session's last one.
export class SessionSubscribers<T> {
  private readonly bySession = new Map<string, Set<(v: T) => void>>();

  emit(sessionId: string, value: T): void {
    for (const fn of this.bySession.get(sessionId) ?? []) fn(value);
  }

  /** Adds `fn` for the session; returns the unsubscribe. */
  add(sessionId: string, fn: (v: T) => void): () => void {
    const set = this.bySession.get(sessionId) ?? new Set();
    this.bySession.set(sessionId, set);
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.bySession.delete(sessionId);
    };
  }
}
