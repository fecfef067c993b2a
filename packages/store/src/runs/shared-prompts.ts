import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';

/**
 * How long a shared part of a system prompt stays in Redis after its last write: 400 days, longer
 * than the longest retention of an ended run (`TETHER_RUN_RETENTION_S`, at most 365 days). Every
 * process that starts runs with it writes it again once a day ({@link SHARED_PROMPT_REFRESH_MS}),
 * so it outlives every checkpoint that names it while any worker still makes such runs.
 */
export const SHARED_PROMPT_TTL_S = 400 * 24 * 3600;
/** How often one process writes a part it uses again (its expiry pushed back). */
export const SHARED_PROMPT_REFRESH_MS = 24 * 3600 * 1000;
/** Parts a process keeps in memory (each a few KB), the least recently used dropped first. */
const CACHED = 256;

/**
 * The parts of system prompts that many runs share (a checkpoint names one by its hash instead of
 * holding it: see `storedCheckpoint` in @tether/agent), one string key each, with a cache of the
 * ones this process wrote or read. A part is content-addressed: writing it twice, from any number
 * of processes, writes the same bytes.
 */
export class SharedPrompts {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly #now: () => number;
  /** ref → the text, and when this process last wrote it (0: only read). In use order. */
  readonly #cache = new Map<string, { text: string; keptAt: number }>();

  constructor(options: { redis: RedisClient; keys: TetherKeys; now?: () => number }) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Makes sure `text` is stored under `ref` (its hash) before a checkpoint that names it is: a
   * write unless this process wrote it within the last day.
   */
  async keep(ref: string, text: string): Promise<void> {
    const cached = this.#cache.get(ref);
    const now = this.#now();
    if (cached && now - cached.keptAt < SHARED_PROMPT_REFRESH_MS) return;
    await this.#redis.set(this.#keys.sharedPrompt(ref), text, 'EX', SHARED_PROMPT_TTL_S);
    this.#remember(ref, text, now);
  }

  /** The text stored under `ref`, or undefined when there is none. */
  async get(ref: string): Promise<string | undefined> {
    const cached = this.#cache.get(ref);
    if (cached) {
      this.#remember(ref, cached.text, cached.keptAt);
      return cached.text;
    }
    const text = await this.#redis.get(this.#keys.sharedPrompt(ref));
    if (text === null) return undefined;
    this.#remember(ref, text, 0);
    return text;
  }

  #remember(ref: string, text: string, keptAt: number): void {
    this.#cache.delete(ref);
    this.#cache.set(ref, { text, keptAt });
    if (this.#cache.size > CACHED) this.#cache.delete(this.#cache.keys().next().value as string);
  }
}
