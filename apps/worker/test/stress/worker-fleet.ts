import { setTimeout as delay } from 'node:timers/promises';
import type { TestProcess } from '@tether/testing';
import type { Deployment } from '../harness.js';

/** A worker process of the fleet. */
interface FleetWorker {
  id: string;
  process: TestProcess;
  killed: boolean;
  /** Stopped (SIGSTOP), now and then or all along, until this promise settles. */
  paused?: Promise<void> | undefined;
}

/**
 * The stress run's worker processes: started with one environment, killed with -9 and replaced,
 * or stopped (SIGSTOP) for a while so that their locks expire under them. Every process's output
 * is kept, the killed ones' too, for the report.
 */
export class WorkerFleet {
  readonly #d: Deployment;
  readonly #env: Record<string, string>;
  readonly #workers: FleetWorker[] = [];
  readonly #starting = new Set<Promise<void>>();
  readonly #errors: unknown[] = [];
  #started = 0;

  constructor(d: Deployment, env: Record<string, string>) {
    this.#d = d;
    this.#env = env;
  }

  get errors(): readonly unknown[] {
    return this.#errors;
  }

  /** Starts a worker (ids `w1`, `w2`, … in start order) and resolves once it takes jobs. */
  async start(): Promise<string> {
    const id = `w${++this.#started}`;
    const process = await this.#d.startWorker({ ...this.#env, TETHER_WORKER_ID: id });
    this.#workers.push({ id, process, killed: false });
    return id;
  }

  /** Starts a worker without waiting for it (`settle` does). */
  startInBackground(): void {
    const starting = this.start().then(
      () => undefined,
      (error: unknown) => {
        this.#errors.push(error);
      },
    );
    this.#starting.add(starting);
    void starting.finally(() => this.#starting.delete(starting));
  }

  /** The workers alive (not killed), paused ones included. */
  alive(): readonly string[] {
    return this.#workers.filter((w) => !w.killed).map((w) => w.id);
  }

  /** How many are alive or starting. */
  size(): number {
    return this.alive().length + this.#starting.size;
  }

  /** Kills a worker with SIGKILL (a paused one too: the signal reaches a stopped process). */
  kill(id: string): void {
    const worker = this.#find(id);
    worker.killed = true;
    worker.process.child.kill('SIGKILL');
  }

  /** Stops a worker (SIGSTOP) for `ms`, then lets it go on (SIGCONT); false if it is paused already. */
  pause(id: string, ms: number): boolean {
    return this.stutter(id, [ms]);
  }

  /**
   * Stops and resumes a worker by turns, `phases` ms each (stopped first, and running at the end),
   * as a starved host would: renewals come late, some too late. False if it is paused already.
   */
  stutter(id: string, phases: readonly number[]): boolean {
    const worker = this.#find(id);
    if (worker.paused || worker.killed) return false;
    const signal = (name: NodeJS.Signals) => {
      if (!worker.killed) worker.process.child.kill(name);
    };
    worker.paused = (async () => {
      for (const [i, ms] of phases.entries()) {
        signal(i % 2 === 0 ? 'SIGSTOP' : 'SIGCONT');
        await delay(ms);
      }
      signal('SIGCONT');
      worker.paused = undefined;
    })();
    return true;
  }

  /**
   * Lets every paused worker go on, waits for the starts in flight, and starts more until `min`
   * are alive. Throws if a start failed.
   */
  async settle(min: number): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.paused));
    while (this.#starting.size > 0) await Promise.all([...this.#starting]);
    if (this.#errors.length > 0) throw this.#errors[0];
    while (this.alive().length < min) await this.start();
  }

  /** Every worker's output lines, by worker id (killed workers' included). */
  logs(): Map<string, string[]> {
    return new Map(this.#workers.map((w) => [w.id, w.process.output().split('\n')]));
  }

  #find(id: string): FleetWorker {
    const worker = this.#workers.find((w) => w.id === id);
    if (!worker) throw new Error(`no worker ${id} in the fleet`);
    return worker;
  }
}
