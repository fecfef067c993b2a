import { createRequire } from 'node:module';
import type { ChainableCommander } from 'ioredis';
import { isCluster, type RedisClient } from './connection.js';

/** ioredis's own slot function (cluster-key-slot, CommonJS without types). */
const calculateSlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** A command's reply in a pipeline: the error Redis answered, or the value. */
export type PipelineReply = [error: Error | null, value: unknown];

/** The Redis Cluster hash slot (0 to 16383) of a key: of its hash tag when it has one. */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/**
 * Commands sent together, whatever slots their keys are in: in one pipeline
 * (one round trip) on a single server, and on a cluster in one pipeline per
 * hash slot, all sent at once. ioredis refuses a cluster pipeline whose keys
 * are served by different nodes, and a pipeline of one slot stays valid when
 * the slot moves (ioredis sends it again where `MOVED` says).
 *
 * Each `add` names the key that decides the slot and queues commands whose
 * keys all share it; `exec` returns every reply in the order the commands
 * were queued, as one pipeline's `exec` does.
 */
export class SlotPipelines {
  readonly #redis: RedisClient;
  /** The one pipeline of a single server. */
  readonly #single: ChainableCommander | undefined;
  /** A cluster's pipelines by slot, with the position of each of their commands among all. */
  readonly #bySlot = new Map<number, { pipeline: ChainableCommander; positions: number[] }>();
  #length = 0;

  constructor(redis: RedisClient) {
    this.#redis = redis;
    this.#single = isCluster(redis) ? undefined : redis.pipeline();
  }

  /** Queues what `queue` adds to the pipeline of `key`'s slot (every key it uses must be in that slot). */
  add(key: string, queue: (pipeline: ChainableCommander) => void): this {
    if (this.#single) {
      queue(this.#single);
      return this;
    }
    const slot = keySlot(key);
    let group = this.#bySlot.get(slot);
    if (!group) {
      group = { pipeline: this.#redis.pipeline(), positions: [] };
      this.#bySlot.set(slot, group);
    }
    const before = group.pipeline.length;
    queue(group.pipeline);
    for (let added = group.pipeline.length - before; added > 0; added--) group.positions.push(this.#length++);
    return this;
  }

  /** Sends every pipeline; the replies in the order the commands were queued. */
  async exec(): Promise<PipelineReply[]> {
    if (this.#single) return ((await this.#single.exec()) ?? []) as PipelineReply[];
    const groups = [...this.#bySlot.values()];
    const results = await Promise.all(groups.map(({ pipeline }) => pipeline.exec()));
    const replies = new Array<PipelineReply>(this.#length);
    groups.forEach(({ positions }, index) => {
      const result = results[index] ?? [];
      positions.forEach((position, i) => {
        replies[position] = (result[i] ?? [new Error('Redis sent no reply'), null]) as PipelineReply;
      });
    });
    return replies;
  }
}
