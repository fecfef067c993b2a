import { type RunEvent, TERMINAL_EVENT_TYPES } from '@tether/protocol';
import type { Deployment } from '../harness.js';

/** A run the stress driver submitted (or a crew child of one), as its events have told so far. */
export interface TrackedRun {
  id: string;
  tenant: string;
  /** What its script does (`plain`, `bash`, `clarify`, `tools`, `crew`, `mixed`, `child`). */
  kind: string;
  parentId?: string | undefined;
  sessionId?: string | undefined;
  /** Its terminal event's type (a failure's with its error code), once logged. */
  ended?: string | undefined;
  /** Clarify request ids still pending. */
  questions: Set<string>;
  /** Client tool request ids still pending. */
  toolCalls: Set<string>;
  /** Request ids resolved one way or another (answered, received, timed out, or the run ended). */
  settled: { requestId: string; kind: 'question' | 'tool' }[];
  children: string[];
}

/**
 * Follows the events of every run it is given, and of their crew children as they start, through
 * the deployment's event hub (subscribe, then read the backlog: nothing is missed). What it keeps
 * is what the driver chooses its operations from; the checks at the end read the logs from Redis.
 */
export class RunTracker {
  readonly runs = new Map<string, TrackedRun>();
  /** Run ids in the order they were tracked. */
  readonly order: string[] = [];
  readonly #d: Deployment;
  readonly #seen = new Map<string, Set<string>>();
  readonly #unsubscribe = new Map<string, () => Promise<void>>();
  readonly #waiters = new Set<() => void>();
  readonly #errors: unknown[] = [];
  readonly #following = new Set<Promise<void>>();

  constructor(d: Deployment) {
    this.#d = d;
  }

  /** Errors met while following (a subscription or a backlog read that failed). */
  get errors(): readonly unknown[] {
    return this.#errors;
  }

  /** Starts following a run (idempotent). */
  track(run: Pick<TrackedRun, 'id' | 'tenant' | 'kind' | 'parentId' | 'sessionId'>): TrackedRun {
    const known = this.runs.get(run.id);
    if (known) return known;
    const tracked: TrackedRun = {
      ...run,
      questions: new Set(),
      toolCalls: new Set(),
      settled: [],
      children: [],
    };
    this.runs.set(run.id, tracked);
    this.order.push(run.id);
    this.#seen.set(run.id, new Set());
    const following = this.#follow(tracked).catch((error: unknown) => {
      this.#errors.push(error);
    });
    this.#following.add(following);
    void following.finally(() => this.#following.delete(following));
    return tracked;
  }

  async #follow(run: TrackedRun): Promise<void> {
    const unsubscribe = await this.#d.hub.subscribe(run.id, (event) => this.#apply(run, event));
    this.#unsubscribe.set(run.id, unsubscribe);
    for (const event of await this.#d.store.readEvents(run.id)) this.#apply(run, event);
    if (run.ended) await this.#stop(run.id);
  }

  #apply(run: TrackedRun, event: RunEvent): void {
    const seen = this.#seen.get(run.id);
    if (!seen || seen.has(event.id)) return;
    seen.add(event.id);
    const data = event.data as { requestId?: string; childRunId?: string };
    switch (event.type) {
      case 'clarify.requested':
        run.questions.add(data.requestId as string);
        break;
      case 'clarify.answered':
      case 'clarify.timed_out':
        this.#settle(run, data.requestId as string, 'question');
        break;
      case 'tool.requested':
        run.toolCalls.add(data.requestId as string);
        break;
      case 'tool.output_received':
      case 'tool.timed_out':
        this.#settle(run, data.requestId as string, 'tool');
        break;
      case 'child.started': {
        const childId = data.childRunId as string;
        if (!run.children.includes(childId)) run.children.push(childId);
        this.track({
          id: childId,
          tenant: run.tenant,
          kind: 'child',
          parentId: run.id,
          sessionId: run.sessionId,
        });
        break;
      }
      default:
        if (TERMINAL_EVENT_TYPES.includes(event.type)) {
          // A failure says its error code (a child timed out by its parent, a worker that gave up).
          const code = (event.data as { error?: { code?: string } }).error?.code;
          run.ended = event.type === 'run.failed' && code ? `${event.type} ${code}` : event.type;
          for (const id of run.questions) this.#settle(run, id, 'question');
          for (const id of run.toolCalls) this.#settle(run, id, 'tool');
          void this.#stop(run.id);
        }
    }
    for (const wake of this.#waiters) wake();
  }

  #settle(run: TrackedRun, requestId: string, kind: 'question' | 'tool'): void {
    const pending = kind === 'question' ? run.questions : run.toolCalls;
    if (pending.delete(requestId)) run.settled.push({ requestId, kind });
  }

  async #stop(runId: string): Promise<void> {
    const unsubscribe = this.#unsubscribe.get(runId);
    this.#unsubscribe.delete(runId);
    await unsubscribe?.().catch((error: unknown) => this.#errors.push(error));
  }

  /** Resolves at the next event of any run followed, or after `timeoutMs`. */
  changed(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, timeoutMs);
      this.#waiters.add(wake);
    });
  }

  /** The runs that have not logged a terminal event, in the order tracked. */
  live(): TrackedRun[] {
    return this.order.map((id) => this.runs.get(id) as TrackedRun).filter((run) => !run.ended);
  }

  /** Resolves once every subscription and backlog read started so far is done. */
  async settled(): Promise<void> {
    while (this.#following.size > 0) await Promise.all([...this.#following]);
  }

  async close(): Promise<void> {
    await this.settled();
    await Promise.all([...this.#unsubscribe.keys()].map((runId) => this.#stop(runId)));
  }
}
