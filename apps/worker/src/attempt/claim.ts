import type { CreateRunBody } from '@tether/protocol';
import type { AttemptContext, Settlement } from './context.js';

/** A run this worker now owns, with what its attempt needs. */
export interface Claimed {
  spec: CreateRunBody;
  /** The stored checkpoint (JSON), if an earlier attempt saved one. */
  checkpoint: string | undefined;
}

/**
 * Claim: the worker becomes the run's owner under its fencing token, and
 * `run.started` (the first time) and `attempt.started` are appended, in one
 * step that also returns the spec and checkpoint. A run with a cancel
 * requested ends cancelled; a run that is gone or has ended needs nothing.
 */
export async function claimAttempt(ctx: AttemptContext): Promise<Claimed | Settlement> {
  const claim = await ctx.store.claim(ctx.runId, ctx.fence, ctx.attempt, ctx.config.workerId);
  if (claim.status === 'cancel') return { kind: 'cancelled' };
  if (claim.status !== 'ok') return { kind: 'nothing', why: `the run is ${claim.status}` };
  if (!claim.spec) {
    return {
      kind: 'failed',
      retryable: false,
      error: { code: 'ERR_WORKER_SPEC_MISSING', message: 'The run record has no spec to run.' },
    };
  }
  return { spec: claim.spec, checkpoint: claim.checkpoint };
}
