import { describe, expect, it } from 'vitest';
import { requestCancel } from '../../src/runs/commands/scripts.js';
import { RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function cancel(run: RunFixture) {
  return requestCancel.run(redis, {
    keys: run.keys,
    args: { channel: run.cancelChannel, runId: run.runId, mode: 'cancel' },
  });
}

describe('requestCancel', () => {
  it.each(['queued', 'running', 'waiting_for_input'])(
    'flags a %s run and tells every worker its id, answering the status it had',
    async (status) => {
      const run = new RunFixture(redis);
      await run.seed({ status });
      const { result, messages } = await run.published(run.cancelChannel, () => cancel(run));
      expect(result).toBe(status);
      expect(await run.record()).toEqual({ status, cancelRequested: '1' });
      expect(messages).toEqual([run.runId]);
    },
  );

  it.each(['completed', 'failed', 'cancelled'])('does nothing once the run is %s', async (status) => {
    const run = new RunFixture(redis);
    await run.seed({ status });
    const before = await run.state();
    const { result, messages } = await run.published(run.cancelChannel, () => cancel(run));
    expect(result).toBe(status);
    expect(messages).toEqual([]);
    expect(await run.state()).toEqual(before);
  });

  it('does nothing for a run that does not exist', async () => {
    const run = new RunFixture(redis);
    const { result, messages } = await run.published(run.cancelChannel, () => cancel(run));
    expect(result).toBe('missing');
    expect(messages).toEqual([]);
    expect(await redis.exists(run.keys.record)).toBe(0);
  });

  it('an interrupt flags the run without telling the workers, and never weakens a cancel', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running' });
    const interrupt = () =>
      requestCancel.run(redis, {
        keys: run.keys,
        args: { channel: run.cancelChannel, runId: run.runId, mode: 'interrupt' },
      });
    const { result, messages } = await run.published(run.cancelChannel, interrupt);
    expect(result).toBe('running');
    expect(messages).toEqual([]);
    expect(await run.record()).toEqual({ status: 'running', cancelRequested: 'interrupt' });
    await cancel(run);
    await interrupt();
    expect((await run.record()).cancelRequested).toBe('1');
  });
});
