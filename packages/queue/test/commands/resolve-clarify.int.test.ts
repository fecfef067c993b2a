import { describe, expect, it } from 'vitest';
import { resolveClarify } from '../../src/scripts.js';
import { parseMessage, REQUEST_ID, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function resolve(run: RunFixture, token: string) {
  return resolveClarify.run(redis, {
    keys: run.clarifyKeys,
    args: { ...run.base, requestId: REQUEST_ID, token },
  });
}

/** A run owned by w1:t1 with the test's request in `status`, due at `expiresAt`. */
async function asked(expiresAt: number, status = 'pending'): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'running', owner: 'w1:t1' });
  await run.seedQuestion(expiresAt, status);
  return run;
}

describe('resolveClarify', () => {
  it('gives the answer of an answered request, and changes nothing', async () => {
    const run = await asked(Date.now() - 1_000, 'answered');
    await redis.hset(run.keys.clarify(REQUEST_ID), 'answer', 'blue');
    expect(await run.unchanged(() => resolve(run, 'w1:t1'))).toEqual(['answered', 'blue']);
  });

  it('finds a request that timed out already, and appends nothing more', async () => {
    const run = await asked(Date.now() - 1_000, 'timed_out');
    expect(await run.unchanged(() => resolve(run, 'w1:t1'))).toEqual(['timed_out']);
  });

  it('gives the deadline of a request still pending, and changes nothing', async () => {
    const expiresAt = Date.now() + 3_600_000;
    const run = await asked(expiresAt);
    expect(await run.unchanged(() => resolve(run, 'w1:t1'))).toEqual(['pending', String(expiresAt)]);
  });

  it('times out a request past its deadline for the owner: marked, question dropped, clarify.timed_out', async () => {
    const run = await asked(Date.now() - 1_000);
    const { result, messages } = await run.published(run.keys.eventsChannel, () => resolve(run, 'w1:t1'));
    expect(result).toEqual(['timed_out']);
    expect((await run.request()).status).toBe('timed_out');
    expect(await redis.exists(run.keys.pending)).toBe(0);
    const events = await run.events();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'clarify.timed_out', data: { requestId: REQUEST_ID } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it('leaves a request past its deadline to the owner when another worker asks', async () => {
    const run = await asked(Date.now() - 1_000);
    expect(await run.unchanged(() => resolve(run, 'w2:t2'))).toEqual(['not_owner']);
  });

  it('finds no request', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    expect(await run.unchanged(() => resolve(run, 'w1:t1'))).toEqual(['missing']);
  });
});
