import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import * as scripts from './commands/scripts.js';

/** How long a tenant's slot keys stay after their last write: an idle tenant's leftovers go. */
const SLOT_KEYS_TTL_MS = 24 * 3600 * 1000;

export interface TenantSlotsOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** Runs of one tenant that may hold a slot at once (`TETHER_TENANT_MAX_RUNNING`), at least 1. */
  cap: number;
  /**
   * How long a slot stays taken without a renewal (ms): the workers' lock
   * duration, so a dead worker's slots free when its runs' locks expire.
   */
  leaseMs: number;
  /**
   * How long a slot handed to a waiting run stays its own until it takes it up
   * (ms): its job is woken to the back of the queue, and may wait there behind
   * other jobs. Default four leases.
   */
  reserveMs?: number;
}

/** What taking a slot answered. */
export type SlotTaken = { held: true } | { held: false; ahead: number };

/**
 * A per-tenant cap on runs executing at once: a semaphore of leases in Redis,
 * three keys under the tenant's hash tag (`TetherKeys.tenantSlots`), changed
 * only by the scripts `acquireTenantSlot`, `releaseTenantSlot`,
 * `renewTenantSlots` and `forgetTenantSlot`.
 *
 * - A slot is a run id in the `running` set, scored by its lease's expiry
 *   (Redis's clock), and the fencing token of the attempt that holds it in
 *   `holders`. At most `cap` are taken; an expired lease is dropped by the next
 *   script that looks, so a dead worker's slot frees after `leaseMs`.
 * - A run that finds no free slot waits in `parked`, oldest first. A release
 *   hands each free slot to the oldest waiting run (holder `''`) and answers
 *   their ids, for the caller to wake them; nobody else can take a slot handed
 *   over, so the runs waiting go in their order.
 * - Only the holder's token releases or renews a slot: an attempt that lost its
 *   run to another worker cannot free the slot the new attempt took over.
 */
export class TenantSlots {
  readonly cap: number;
  readonly leaseMs: number;
  readonly reserveMs: number;
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;

  constructor(options: TenantSlotsOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.cap = options.cap;
    this.leaseMs = options.leaseMs;
    this.reserveMs = options.reserveMs ?? 4 * options.leaseMs;
    if (!Number.isInteger(this.cap) || this.cap < 1) {
      throw new RangeError(`TenantSlots option "cap" must be an integer of at least 1, got ${this.cap}`);
    }
    for (const [name, value] of [
      ['leaseMs', this.leaseMs],
      ['reserveMs', this.reserveMs],
    ] as const) {
      if (!Number.isInteger(value) || value < 1) {
        throw new RangeError(`TenantSlots option "${name}" must be a positive integer (ms), got ${value}`);
      }
    }
  }

  /** The tenant of a run, from its record; undefined when the run is gone. */
  async tenantOf(runId: string): Promise<string | undefined> {
    return (await this.#redis.hget(this.#keys.run(runId).record, 'tenant')) ?? undefined;
  }

  /** Takes a slot for the run's attempt (`holder`: its fencing token), or puts the run in line for one. */
  async take(tenant: string, runId: string, holder: string): Promise<SlotTaken> {
    const reply = await scripts.acquireTenantSlot.run(this.#redis, {
      keys: this.#keys.tenantSlots(tenant),
      args: { runId, holder, cap: this.cap, leaseMs: this.leaseMs, ttlMs: SLOT_KEYS_TTL_MS },
    });
    return reply[0] === 1 ? { held: true } : { held: false, ahead: reply[1] };
  }

  /**
   * Gives the slot back (if `holder` still holds it; `''` for a slot handed
   * over and not taken up) and hands the free slots to the runs waiting
   * longest: returns their ids, to wake them.
   */
  release(tenant: string, runId: string, holder: string): Promise<string[]> {
    return scripts.releaseTenantSlot.run(this.#redis, {
      keys: this.#keys.tenantSlots(tenant),
      args: { runId, holder, cap: this.cap, reserveMs: this.reserveMs, ttlMs: SLOT_KEYS_TTL_MS },
    });
  }

  /**
   * Forgets a run that ends holding no slot (cancelled while in line, or before it took up the
   * slot handed to it): out of the line, and a slot handed to it is free again. A slot an attempt
   * holds stays that attempt's. Idempotent. True when the run was in line or had a slot handed to it.
   */
  async forget(tenant: string, runId: string): Promise<boolean> {
    return (
      (await scripts.forgetTenantSlot.run(this.#redis, {
        keys: this.#keys.tenantSlots(tenant),
        args: { runId },
      })) === 1
    );
  }

  /** Renews the leases of `held` (run id and holder); returns the run ids whose slot is no longer theirs. */
  async renew(tenant: string, held: readonly { runId: string; holder: string }[]): Promise<string[]> {
    if (held.length === 0) return [];
    return scripts.renewTenantSlots.run(this.#redis, {
      keys: this.#keys.tenantSlots(tenant),
      args: {
        leaseMs: this.leaseMs,
        ttlMs: SLOT_KEYS_TTL_MS,
        held: held.flatMap(({ runId, holder }) => [runId, holder]),
      },
    });
  }

  /** Whether the run has a slot (taken, or handed to it while it waited). */
  async hasSlot(tenant: string, runId: string): Promise<boolean> {
    return (await this.#redis.zscore(this.#keys.tenantSlots(tenant).running, runId)) !== null;
  }

  /** The runs holding a slot of the tenant now, expired leases included until a script drops them. */
  running(tenant: string): Promise<string[]> {
    return this.#redis.zrange(this.#keys.tenantSlots(tenant).running, '0', '-1');
  }
}
