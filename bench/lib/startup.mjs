// The worker's start of an attempt, as the start-up benches time it: claimAttempt then prepareAttempt
// (apps/worker, the built dist) in this process, on a real RunStore; kinds of runs interleaved.
import { claimAttempt } from '../../apps/worker/dist/attempt/claim.js';
import { prepareAttempt } from '../../apps/worker/dist/attempt/prepare.js';

/** A logger that says nothing, for attempt contexts. */
export const silent = { warn() {}, info() {}, debug() {}, error() {}, child: () => silent };

/** Claim and prepare of the run of `ctx`, timed; fails when the run did not start. */
export async function timedStart(ctx, kind) {
  const begin = performance.now();
  const prepared = await prepareAttempt(ctx, await claimAttempt(ctx));
  const startMs = performance.now() - begin;
  if (!prepared.checkpoint) throw new Error(`the ${kind} run did not start: ${JSON.stringify(prepared)}`);
  return { startMs, prepared };
}

/**
 * `start(kind)` for every kind, `warmup + rounds` times, the order turning each round so no kind is
 * always first; each kind's results after the warm-up, in order.
 */
export async function interleaved(kinds, rounds, warmup, start) {
  const results = Object.fromEntries(kinds.map((kind) => [kind, []]));
  for (let i = 0; i < warmup + rounds; i++) {
    const turn = i % kinds.length;
    for (const kind of [...kinds.slice(turn), ...kinds.slice(0, turn)]) {
      const result = await start(kind);
      if (i >= warmup) results[kind].push(result);
    }
  }
  return results;
}
