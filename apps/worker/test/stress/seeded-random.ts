/**
 * A seeded pseudo-random generator (mulberry32): the same seed gives the same sequence of draws,
 * so a stress run's choices can be replayed from the seed it printed.
 */
export class SeededRandom {
  readonly seed: number;
  #state: number;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) {
      throw new RangeError(`SeededRandom seed must be an integer from 0 to ${0xffff_ffff}, got ${seed}`);
    }
    this.seed = seed;
    this.#state = seed;
  }

  /** A number in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** An integer in [min, max]. */
  between(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** One of `items` (undefined when there is none); always one draw, so the sequence does not depend on it. */
  pick<T>(items: readonly T[]): T | undefined {
    const i = this.int(Math.max(items.length, 1));
    return items[i];
  }

  /** A key of `weights`, each as likely as its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    const total = entries.reduce((sum, [, weight]) => sum + weight, 0);
    let draw = this.next() * total;
    for (const [key, weight] of entries) {
      draw -= weight;
      if (draw < 0) return key;
    }
    return (entries.at(-1) as [K, number])[0];
  }
}
