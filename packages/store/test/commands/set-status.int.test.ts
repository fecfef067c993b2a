import { describe, expect, it } from 'vitest';
import { setStatus } from '../../src/runs/commands/scripts.js';
import { RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function set(run: RunFixture, token: string, status: string) {
  return setStatus.run(redis, { keys: run.keys, args: { token, status } });
}

describe('setStatus', () => {
  it('sets the status while the caller owns the run', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    expect(await set(run, 'w1:t1', 'waiting_for_input')).toBe(1);
    expect(await run.record()).toEqual({ status: 'waiting_for_input', owner: 'w1:t1' });
  });

  it("changes nothing with another worker's token", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w2:t2' });
    expect(await run.unchanged(() => set(run, 'w1:t1', 'waiting_for_input'))).toBe(0);
  });

  it.each(['completed', 'failed', 'cancelled'])('changes nothing once the run is %s', async (status) => {
    const run = new RunFixture(redis);
    await run.seed({ status, owner: 'w1:t1' });
    expect(await run.unchanged(() => set(run, 'w1:t1', 'queued'))).toBe(0);
  });

  it('writes nothing for a run that does not exist', async () => {
    const run = new RunFixture(redis);
    expect(await set(run, 'w1:t1', 'queued')).toBe(0);
    expect(await redis.exists(run.keys.record)).toBe(0);
  });
});
