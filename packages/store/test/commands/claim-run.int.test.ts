import { describe, expect, it } from 'vitest';
import { claimRun } from '../../src/runs/commands/scripts.js';
import { RunFixture, useRedis } from './fixture.js';

const redis = useRedis();
/** A time the script set: epoch ms, by Redis's clock. */
const REDIS_NOW = expect.stringMatching(/^1\d{12}$/);

function claim(run: RunFixture, token: string, attempt: number, workerId = token.split(':')[0] as string) {
  return claimRun.run(redis, {
    keys: run.scriptKeys,
    args: { ...run.base, token, attempt, workerId, parentId: '' },
  });
}

describe('claimRun', () => {
  it('the first claim: owner, running, startedAt, run.started then attempt.started, the spec back', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'queued', attempts: 0 });
    await redis.set(run.keys.spec, '{"input":"hi"}');
    expect(await claim(run, 'w1:t1', 1)).toEqual(['ok', '{"input":"hi"}', '', '', '', 0]);
    expect(await run.record()).toEqual({
      status: 'running',
      owner: 'w1:t1',
      attempts: '1',
      startedAt: REDIS_NOW,
    });
    expect((await run.events()).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'run.started', data: { attempt: 1, workerId: 'w1' } },
      { type: 'attempt.started', data: { attempt: 1, resumed: false, step: 0 } },
    ]);
  });

  it('a later claim: the new owner, the highest attempt kept, the checkpoint back, resumed at the saved step', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'queued', attempts: 3, startedAt: 'earlier', owner: 'w1:t1', step: 4 });
    await redis.set(run.keys.spec, '{"input":"hi"}');
    await redis.set(run.keys.checkpoint, '{"version":1}');
    expect(await claim(run, 'w2:t2', 2)).toEqual(['ok', '{"input":"hi"}', '{"version":1}', '', '', 0]);
    expect(await run.record()).toMatchObject({
      status: 'running',
      owner: 'w2:t2',
      attempts: '3',
      startedAt: 'earlier',
    });
    expect((await run.events()).map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'attempt.started', data: { attempt: 2, resumed: true, step: 4 } },
    ]);
  });

  it('starts at step 0 without a checkpoint, whatever step the record shows, and gives back no spec once it is gone', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', attempts: 1, startedAt: 'earlier', step: 4 });
    expect(await claim(run, 'w1:t1', 2)).toEqual(['ok', '', '', '', '', 0]);
    expect((await run.events()).map(({ data }) => data)).toEqual([{ attempt: 2, resumed: false, step: 0 }]);
  });

  it('writes the worker id as a JSON string, whatever it holds', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'queued' });
    await claim(run, 'w"1\\:t1', 1, 'w"1\\');
    expect((await run.events())[0]?.data).toEqual({ attempt: 1, workerId: 'w"1\\' });
  });

  it('finds a missing run and writes nothing', async () => {
    const run = new RunFixture(redis);
    expect(await claim(run, 'w1:t1', 1)).toEqual(['missing']);
    expect(await redis.exists(run.keys.record, run.keys.events)).toBe(0);
  });

  it('finds a cancel requested and changes nothing', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'queued', cancelRequested: '1' });
    expect(await run.unchanged(() => claim(run, 'w1:t1', 1))).toEqual(['cancel']);
  });

  it.each(['completed', 'failed', 'cancelled'])('finds the run %s and changes nothing', async (status) => {
    const run = new RunFixture(redis);
    await run.seed({ status, cancelRequested: '1' });
    expect(await run.unchanged(() => claim(run, 'w1:t1', 1))).toEqual([status]);
  });

  it("a session's run: only at the head of the session's queue, and its session comes back", async () => {
    const run = new RunFixture(redis, { session: true });
    await run.seed({ status: 'queued', attempts: 0, session: run.sessionId as string });
    await redis.rpush(run.keys.session.queue, 'run_ahead', run.runId);
    expect(await run.unchanged(() => claim(run, 'w1:t1', 1))).toEqual(['wait', 'run_ahead']);
    await redis.lpop(run.keys.session.queue);
    expect(await claim(run, 'w1:t1', 1)).toEqual(['ok', '', '', run.sessionId, '', 0]);
    expect((await run.record()).status).toBe('running');
  });
});
