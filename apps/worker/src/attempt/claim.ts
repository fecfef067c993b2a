import { TERMINAL_STATUSES } from '@tether/protocol';
import type { RunSpec } from '@tether/store/runs';
import type { AttemptContext, Settlement } from './context.js';

/** A run this worker now owns, with what its attempt needs. */
export interface Claimed {
  tenant: string;
  spec: RunSpec;
  /** The stored checkpoint (JSON), if an earlier attempt saved one. */
  checkpoint: string | undefined;
  /** The session the run belongs to, if any. */
  sessionId?: string | undefined;
  /** How many messages sent to the run wait to be taken. */
  inbox?: number | undefined;
}

/**
 * Claim: the worker becomes the run's owner under its fencing token, and
 * `run.started` (the first time) and `attempt.started` are appended, in one
 * step that also returns the spec and checkpoint. A run with a cancel
 * requested ends cancelled; a run that is gone or has ended needs nothing. A
 * session's run with another of the session's runs ahead of it waits (only
 * one run of a session executes at a time); a run ahead that is gone or has
 * ended without leaving the queue is taken off it first. A run still scheduled
 * (its job came up early: its time was moved) waits until its time. A run that
 * never started and is past its deadline to start by is not started: it ends expired.
 */
export async function claimAttempt(ctx: AttemptContext): Promise<Claimed | Settlement> {
  const { store, runId } = ctx;
  const parent = ctx.parentRunId ?? '';
  let claim = await store.claim(runId, ctx.fence, ctx.attempt, ctx.config.workerId, parent);
  if (claim.status === 'wait') {
    const ahead = await store.get(claim.ahead);
    if (ahead && !TERMINAL_STATUSES.includes(ahead.status)) {
      return { kind: 'released', why: 'session', ahead: claim.ahead };
    }
    await store.dropFromSessionQueue(runId, claim.ahead);
    claim = await store.claim(runId, ctx.fence, ctx.attempt, ctx.config.workerId, parent);
    if (claim.status === 'wait') return { kind: 'released', why: 'session', ahead: claim.ahead };
  }
  if (claim.status === 'early') return { kind: 'released', why: 'scheduled', runAtMs: claim.runAtMs };
  if (claim.status === 'expire') return { kind: 'expired', expiresAtMs: claim.expiresAtMs };
  if (claim.status === 'cancel') return { kind: 'cancelled' };
  if (claim.status !== 'ok') return { kind: 'lost', why: `the run is ${claim.status}`, handBack: false };
  if (!claim.spec) {
    return {
      kind: 'failed',
      retryable: false,
      error: { code: 'ERR_WORKER_SPEC_MISSING', message: 'The run record has no spec to run.' },
    };
  }
  const { tenant, spec, checkpoint, sessionId, inbox } = claim;
  return { tenant, spec, checkpoint, sessionId, inbox };
}
