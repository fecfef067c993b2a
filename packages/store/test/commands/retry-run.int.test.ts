import { describe, expect, it } from 'vitest';
import { retryRun } from '../../src/runs/commands/scripts.js';
import { parseMessage, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();
const ERROR = { code: 'ERR_MODEL_RATE_LIMITED', message: 'Slow "down"' };

function retry(run: RunFixture, token: string) {
  return retryRun.run(redis, {
    keys: run.keys,
    args: { ...run.base, attempt: 2, delayMs: 1500, error: JSON.stringify(ERROR), token },
  });
}

describe('retryRun', () => {
  it("queues the owner's run again, with run.retrying", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    const { result, messages } = await run.published(run.keys.eventsChannel, () => retry(run, 'w1:t1'));
    expect(await run.record()).toEqual({ status: 'queued', owner: 'w1:t1' });
    const events = await run.events();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'run.retrying', data: { attempt: 2, delayMs: 1500, error: ERROR } },
    ]);
    expect(result).toBe(events[0]?.id);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it("changes nothing with another worker's token", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w2:t2' });
    const before = await run.state();
    expect(await retry(run, 'w1:t1')).toBeNull();
    expect(await run.state()).toEqual(before);
  });

  it.each(['completed', 'failed', 'cancelled'])('changes nothing once the run is %s', async (status) => {
    const run = new RunFixture(redis);
    await run.seed({ status, owner: 'w1:t1' });
    const before = await run.state();
    expect(await retry(run, 'w1:t1')).toBeNull();
    expect(await run.state()).toEqual(before);
  });

  it('writes nothing for a run that does not exist', async () => {
    const run = new RunFixture(redis);
    expect(await retry(run, 'w1:t1')).toBeNull();
    expect(await redis.exists(run.keys.record, run.keys.events)).toBe(0);
  });
});
