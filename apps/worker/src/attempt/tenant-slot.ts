import { TERMINAL_STATUSES } from '@tether/protocol';
import { promoteJob, type RunService, type RunStore } from '@tether/store/runs';
import type { TenantSlots } from '@tether/store/tenant-slots';
import type { Logger } from 'pino';

/**
 * A tenant's cap on runs executing at once (`TETHER_TENANT_MAX_RUNNING`), as
 * the worker keeps it around each attempt:
 *
 * 1. Before the claim, the attempt takes one of its tenant's slots
 *    (`TenantSlots.take`). Over the cap it takes none and its job waits,
 *    delayed and holding no worker slot (the `capped` settlement), with the
 *    run unchanged; unless its claim would end it (a cancel asked for while
 *    this worker had the job, so the API could not take the job off the
 *    queue, or a run that has ended and whose job came back): then the claim
 *    ends it (or finds it ended) without a slot, and the run leaves the line.
 * 2. While the attempt runs, its slot's lease is renewed each time BullMQ
 *    renews the job's lock (`renew`), so a worker killed with -9 loses its
 *    slots when it loses its locks. A renewal that finds the slot gone (its
 *    lease lapsed, a late renewal, and another run took it) stops the attempt
 *    as a lost lock does (`onLost`): running on would put the tenant over its
 *    cap. The job goes back to waiting and takes a slot again, or waits for one.
 * 3. When the attempt ends, whatever the end (a throw included), the slot is
 *    given back, and the runs the release hands a free slot to are woken
 *    (their delayed jobs promoted); one that is gone or has ended gives its
 *    slot back in turn.
 *
 * A run waiting for an answer or for its children is between attempts: it
 * holds no slot.
 */
export class TenantSlotKeeper {
  readonly #slots: TenantSlots;
  readonly #runs: RunService;
  readonly #store: RunStore;
  readonly #log: Logger;
  readonly #onLost: (runId: string) => void;
  /** The slots this process holds: run id → its tenant and the fencing token of the attempt. */
  readonly #held = new Map<string, { tenant: string; holder: string }>();

  constructor(options: {
    slots: TenantSlots;
    runs: RunService;
    store: RunStore;
    logger: Logger;
    /** Stops the attempt of a run whose slot is no longer its own (as for a lost lock). */
    onLost: (runId: string) => void;
  }) {
    this.#slots = options.slots;
    this.#runs = options.runs;
    this.#store = options.store;
    this.#log = options.logger;
    this.#onLost = options.onLost;
  }

  /** The cap: slots of one tenant. */
  get cap(): number {
    return this.#slots.cap;
  }

  /**
   * Takes a slot of the run's tenant for this attempt: the slot held, to be
   * released when the attempt ends; or the `tenant_cap` release, for the job to
   * wait; or, over the cap with a run its claim ends (`RunStore.claimEnds`), no
   * slot (`ending`): its release takes the run out of the line, then the claim
   * ends it (or finds it ended). Undefined
   * when the run is gone (its claim finds nothing to do).
   */
  async take(ctx: SlotTaker): Promise<HeldSlot | EndingInLine | Capped | undefined> {
    const { runId, fence } = ctx;
    const tenant = ctx.tenant ?? (await this.#slots.tenantOf(runId));
    if (tenant === undefined) return undefined;
    const taken = await this.#slots.take(tenant, runId, fence);
    if (!taken.held) {
      // A run whose claim ends it needs no slot, and leaves the line (it would keep its place until
      // a slot freed, then be handed one it never uses): a cancel asked for while this worker had
      // the job (the API could not take it off the queue), or a run that ended and whose job came
      // back (its worker ended it and died, or stopped past its lock, before completing the job).
      if (await this.#store.claimEnds(runId)) {
        return { kind: 'ending', release: () => this.#forget(tenant, runId, ctx.log) };
      }
      return {
        kind: 'released',
        why: 'tenant_cap',
        tenant,
        ahead: taken.ahead,
        untilMs: Date.now() + slotWaitMs(taken.ahead, this.cap),
      };
    }
    this.#held.set(runId, { tenant, holder: fence });
    return { kind: 'held', release: () => this.#release(tenant, runId, fence, ctx.log) };
  }

  /** Whether the run has a slot now (one handed to it while its job was being delayed). */
  hasSlot(tenant: string, runId: string): Promise<boolean> {
    return this.#slots.hasSlot(tenant, runId);
  }

  /** Renews the leases of the slots this process holds for `runIds` (whose locks BullMQ just renewed). */
  renew(runIds: readonly string[]): void {
    const byTenant = new Map<string, { runId: string; holder: string }[]>();
    for (const runId of runIds) {
      const held = this.#held.get(runId);
      if (!held) continue;
      const list = byTenant.get(held.tenant) ?? [];
      list.push({ runId, holder: held.holder });
      byTenant.set(held.tenant, list);
    }
    for (const [tenant, held] of byTenant) {
      this.#slots.renew(tenant, held).then(
        (lost) => {
          for (const runId of lost) {
            // The attempt may have ended meanwhile (its slot given back): nothing to stop then.
            if (this.#held.get(runId)?.holder !== held.find((h) => h.runId === runId)?.holder) continue;
            this.#log.warn(
              { runId, tenant },
              "the run's tenant slot was lost (its lease lapsed); stopping the attempt",
            );
            this.#onLost(runId);
          }
        },
        (error: unknown) => this.#log.warn({ err: error, tenant }, 'could not renew tenant slots'),
      );
    }
  }

  async #release(tenant: string, runId: string, holder: string, log: Logger): Promise<void> {
    if (this.#held.get(runId)?.holder === holder) this.#held.delete(runId);
    try {
      let handed = await this.#slots.release(tenant, runId, holder);
      // Each run gone or ended gives its slot back, which may hand it on: at most one pass per run waiting.
      while (handed.length > 0) {
        const next: string[] = [];
        for (const waiting of handed) {
          if (await this.#wake(waiting)) continue;
          next.push(...(await this.#slots.release(tenant, waiting, '')));
        }
        handed = next;
      }
    } catch (error) {
      // The lease runs out by itself, and the runs waiting look again after their own delay.
      log.warn({ err: error, tenant }, 'could not give the tenant slot back; its lease will run out');
    }
  }

  /**
   * A run that ended in line (cancelled) leaves it, and a slot handed to it meanwhile is free
   * again: the free slots go on to the runs waiting longest, which are woken.
   */
  async #forget(tenant: string, runId: string, log: Logger): Promise<void> {
    try {
      await this.#slots.forget(tenant, runId);
    } catch (error) {
      // Its place goes at the next hand-over (it has ended), a slot handed to it when its reserve runs out.
      log.warn({ err: error, tenant }, "could not take the run out of its tenant's line");
      return;
    }
    // The run holds nothing now: the release gives nothing back, and only hands the free slots on.
    await this.#release(tenant, runId, '', log);
  }

  /** Wakes a run handed a slot (its delayed job to waiting); false when the run is gone or has ended. */
  async #wake(runId: string): Promise<boolean> {
    const run = await this.#store.get(runId);
    if (!run || TERMINAL_STATUSES.includes(run.status)) return false;
    const job = await this.#runs.getJob(runId, run);
    if (!job) return false;
    await promoteJob(job);
    return true;
  }
}

/** What `take` reads of the attempt (its `AttemptContext`): the run, the fencing token, the tenant once known, the log. */
export interface SlotTaker {
  runId: string;
  fence: string;
  tenant?: string | undefined;
  log: Logger;
}

/** A slot this attempt holds: release it when the attempt ends. */
export interface HeldSlot {
  kind: 'held';
  release(): Promise<void>;
}

/**
 * A run over its tenant's cap whose claim ends it (a cancel asked for, or the run has ended):
 * `release` takes it out of the line, then its attempt goes on to the claim without a slot (the
 * claim ends the run, or finds it ended, running nothing).
 */
export interface EndingInLine {
  kind: 'ending';
  release(): Promise<void>;
}

/**
 * The settlement of a run over its tenant's cap on running runs, before its claim: it waits, the run
 * unchanged, until a release hands it a slot (or `untilMs`, epoch ms, to look again); `ahead` runs
 * wait before it.
 */
export interface Capped {
  kind: 'released';
  why: 'tenant_cap';
  tenant: string;
  ahead: number;
  untilMs: number;
}

/** How long a run over the cap waits before it looks again by itself, if no release wakes it (ms). */
export const SLOT_WAIT_MS = 5_000;
/** The longest such wait (ms). */
export const SLOT_WAIT_MAX_MS = 60_000;

/**
 * The delay of a run over its tenant's cap with `ahead` runs waiting before it:
 * a release wakes the runs in line in order, so this only matters when a wake
 * is lost (the releasing worker died) or a dead worker's leases ran out. A run
 * near the front looks again after about {@link SLOT_WAIT_MS}; one further back
 * less often (a round more per `cap` runs ahead, up to {@link SLOT_WAIT_MAX_MS}),
 * so a long line costs few wasted claims. Jittered by ±20%, so runs parked
 * together do not all wake together.
 */
export function slotWaitMs(ahead: number, cap: number, random = Math.random()): number {
  const rounds = Math.min(SLOT_WAIT_MAX_MS / SLOT_WAIT_MS, 1 + Math.floor(ahead / cap));
  return Math.round(SLOT_WAIT_MS * rounds * (0.8 + 0.4 * random));
}
