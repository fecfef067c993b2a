import { uniquePrefix } from '@tether/testing';
import type { Redis } from 'ioredis';
import { createKeys, type TenantSlotKeys } from '../../src/redis/index.js';

/** A tenant's slot keys under a prefix of their own, with what a test of their scripts needs around them. */
export class SlotFixture {
  readonly redis: Redis;
  readonly keys: TenantSlotKeys;
  readonly tenant = 'acme';

  constructor(redis: Redis) {
    this.redis = redis;
    this.keys = createKeys(uniquePrefix('slots')).tenantSlots(this.tenant);
  }

  /** Runs holding a slot: run id → holder, and a lease expiring `expiresInMs` from now (negative: expired). */
  async hold(holders: Record<string, string>, expiresInMs = 60_000): Promise<void> {
    for (const [runId, holder] of Object.entries(holders)) {
      await this.redis.zadd(this.keys.running, Date.now() + expiresInMs, runId);
      await this.redis.hset(this.keys.holders, runId, holder);
    }
  }

  /** Runs waiting for a slot, in this order. */
  async park(...runIds: string[]): Promise<void> {
    for (const [index, runId] of runIds.entries())
      await this.redis.zadd(this.keys.parked, 1_000 + index, runId);
  }

  /** Every slot (run id → holder), and the runs waiting in order. */
  async state(): Promise<{ running: Record<string, string>; parked: string[] }> {
    const running: Record<string, string> = {};
    const holders = await this.redis.hgetall(this.keys.holders);
    for (const runId of await this.redis.zrange(this.keys.running, 0, -1))
      running[runId] = holders[runId] ?? '?';
    // A holder without a slot would be a leak of the hash.
    for (const runId of Object.keys(holders)) if (!(runId in running)) running[runId] = 'no slot';
    return { running, parked: await this.redis.zrange(this.keys.parked, 0, -1) };
  }

  /** When the run's lease expires (epoch ms). */
  async expiry(runId: string): Promise<number> {
    return Number(await this.redis.zscore(this.keys.running, runId));
  }
}
