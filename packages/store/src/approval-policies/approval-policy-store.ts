import type { ApprovalPolicy } from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import { TenantCache } from '../redis/tenant-cache.js';

/**
 * A tenant's default approval policy (`/v1/approval-policy`): one string under the tenant's hash
 * tag, the policy as JSON. A run whose body (and whose session's defaults) names no `approval`
 * takes it at submit, so what a run was asked to approve never changes under it. Every process
 * keeps a copy per tenant (see {@link TenantCache}): a submit costs no round trip, and a change is
 * published so that every process drops its copy at once.
 */
export interface StoredApprovalPolicy {
  policy: ApprovalPolicy;
  /** Epoch ms. */
  updatedAt: number;
}

export interface ApprovalPolicyStoreOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** A connection in subscriber mode (shared), to hear that a tenant's policy changed. */
  subscriber?: RedisClient | undefined;
  /** How long a copy is kept without a change heard (ms). Default 10,000. */
  cacheMs?: number;
}

export class ApprovalPolicyStore {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly #cache: TenantCache<StoredApprovalPolicy | undefined>;

  constructor(options: ApprovalPolicyStoreOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.#cache = new TenantCache({
      load: (tenant) => this.read(tenant),
      ttlMs: options.cacheMs ?? 10_000,
      channel: options.keys.approvalPolicyChannel,
      subscriber: options.subscriber,
    });
  }

  /** Resolves once changes made by other processes are heard. */
  listen(): Promise<void> {
    return this.#cache.listen();
  }

  /** The tenant's default policy, read from Redis (undefined when it has none). */
  async read(tenant: string): Promise<StoredApprovalPolicy | undefined> {
    const json = await this.#redis.get(this.#keys.approvalPolicy(tenant));
    return json === null ? undefined : (JSON.parse(json) as StoredApprovalPolicy);
  }

  /** The tenant's default policy from this process's copy (read when it has none, or it lapsed). */
  async get(tenant: string): Promise<ApprovalPolicy | undefined> {
    return (await this.#cache.get(tenant))?.policy;
  }

  /** Sets the tenant's default policy (checked by the caller), and tells every process. */
  async save(tenant: string, policy: ApprovalPolicy): Promise<StoredApprovalPolicy> {
    const stored: StoredApprovalPolicy = { policy, updatedAt: Date.now() };
    await this.#redis.set(this.#keys.approvalPolicy(tenant), JSON.stringify(stored));
    await this.#changed(tenant);
    return stored;
  }

  /** Removes the tenant's default policy; false when it had none. */
  async remove(tenant: string): Promise<boolean> {
    const removed = await this.#redis.del(this.#keys.approvalPolicy(tenant));
    await this.#changed(tenant);
    return removed > 0;
  }

  async #changed(tenant: string): Promise<void> {
    this.#cache.forget(tenant);
    await this.#redis.publish(this.#keys.approvalPolicyChannel, tenant);
  }

  /** Stops listening for changes. */
  close(): void {
    this.#cache.close();
  }
}
