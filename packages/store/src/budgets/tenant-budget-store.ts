import type { TenantBudgets } from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import { TenantCache } from '../redis/tenant-cache.js';
import { type BudgetUse, budgetUses, exceededBudget, type LedgerTotals } from './budget-check.js';
import type { UsageLedger } from './usage-ledger.js';

/** A tenant's budgets as set with `PUT /v1/budgets`. */
export interface StoredTenantBudgets {
  budgets: TenantBudgets;
  /** Epoch ms. */
  updatedAt: number;
}

/**
 * The budgets in force for a tenant: its own (`api`), else the operator's default for it
 * (`env`, `TETHER_TENANT_BUDGETS`). A tenant's own replace the default as a whole.
 */
export type BudgetsInForce =
  | { budgets: TenantBudgets; source: 'api'; updatedAt: number }
  | { budgets: TenantBudgets; source: 'env' };

export interface TenantBudgetStoreOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** The operator's budgets per tenant (`TETHER_TENANT_BUDGETS`), in force where a tenant set none. */
  defaults?: Readonly<Record<string, TenantBudgets>> | undefined;
  /** A connection in subscriber mode (shared), to hear that a tenant's budgets changed. */
  subscriber?: RedisClient | undefined;
  /** How long a copy is kept without a change heard (ms). Default 10,000. */
  cacheMs?: number;
}

/**
 * The tenants' budgets (`/v1/budgets`): one string per tenant under its hash tag, the budgets as
 * JSON. Every process keeps a copy per tenant ({@link TenantCache}), so a submit or a turn of a
 * tenant costs no round trip to learn them, and a change is published so every process drops its
 * copy at once. A tenant with none set gets the operator's default for it, if any.
 */
export class TenantBudgetStore {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly #defaults: Readonly<Record<string, TenantBudgets>>;
  readonly #cache: TenantCache<StoredTenantBudgets | undefined>;

  constructor(options: TenantBudgetStoreOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.#defaults = options.defaults ?? {};
    this.#cache = new TenantCache({
      load: (tenant) => this.read(tenant),
      ttlMs: options.cacheMs ?? 10_000,
      channel: options.keys.tenantBudgetsChannel,
      subscriber: options.subscriber,
    });
  }

  /** Resolves once changes made by other processes are heard. */
  listen(): Promise<void> {
    return this.#cache.listen();
  }

  /** The tenant's own budgets, read from Redis (undefined when it set none). */
  async read(tenant: string): Promise<StoredTenantBudgets | undefined> {
    const json = await this.#redis.get(this.#keys.tenantUsage(tenant).budgets);
    return json === null ? undefined : (JSON.parse(json) as StoredTenantBudgets);
  }

  /** The budgets in force for the tenant, from this process's copy (read when it has none, or it lapsed). */
  async get(tenant: string): Promise<BudgetsInForce | undefined> {
    const own = await this.#cache.get(tenant);
    if (own) return { ...own, source: 'api' };
    const fallback = this.#defaults[tenant];
    return fallback ? { budgets: fallback, source: 'env' } : undefined;
  }

  /** Sets the tenant's own budgets (checked by the caller), and tells every process. */
  async save(tenant: string, budgets: TenantBudgets): Promise<StoredTenantBudgets> {
    const stored: StoredTenantBudgets = { budgets, updatedAt: Date.now() };
    await this.#redis.set(this.#keys.tenantUsage(tenant).budgets, JSON.stringify(stored));
    await this.#changed(tenant);
    return stored;
  }

  /** Removes the tenant's own budgets (the operator's default applies again); false when it had none. */
  async remove(tenant: string): Promise<boolean> {
    const removed = await this.#redis.del(this.#keys.tenantUsage(tenant).budgets);
    await this.#changed(tenant);
    return removed > 0;
  }

  async #changed(tenant: string): Promise<void> {
    this.#cache.forget(tenant);
    await this.#redis.publish(this.#keys.tenantBudgetsChannel, tenant);
  }

  /** Stops listening for changes. */
  close(): void {
    this.#cache.close();
  }
}

/**
 * The budget a tenant has used up at `now`, if any: none without budgets (no round trip at all),
 * else its budgets against one read of its ledger.
 */
export async function usedUpBudget(
  budgets: TenantBudgetStore,
  ledger: UsageLedger,
  tenant: string,
  now = Date.now(),
): Promise<BudgetUse | undefined> {
  const inForce = await budgets.get(tenant);
  if (!inForce) return undefined;
  const totals: LedgerTotals = await ledger.totals(tenant, now);
  return exceededBudget(budgetUses(inForce.budgets, totals, now));
}
