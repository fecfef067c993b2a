/**
 * Wakes a pump of this process that waits for work when a dispatch of this
 * process makes a delivery of its endpoint due: an awake pump (its lease
 * current) is not woken through the queue, so without this it would find the
 * delivery only at its next poll.
 */
export class DueSignals {
  readonly #waiting = new Map<string, Set<() => void>>();

  /** A delivery of the endpoint is due now. */
  notify(tenant: string, endpointId: string): void {
    const key = `${tenant}\n${endpointId}`;
    const waiting = this.#waiting.get(key);
    if (!waiting) return;
    this.#waiting.delete(key);
    for (const wake of waiting) wake();
  }

  /** Resolves at the next `notify` of the endpoint, or after `ms`. */
  wait(tenant: string, endpointId: string, ms: number): Promise<void> {
    const key = `${tenant}\n${endpointId}`;
    return new Promise((resolve) => {
      let waiting = this.#waiting.get(key);
      if (!waiting) {
        waiting = new Set();
        this.#waiting.set(key, waiting);
      }
      const set = waiting;
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0 && this.#waiting.get(key) === set) this.#waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }
}
