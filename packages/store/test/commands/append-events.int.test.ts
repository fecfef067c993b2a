import { describe, expect, it } from 'vitest';
import { appendEvents } from '../../src/runs/commands/scripts.js';
import { parseMessage, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function append(run: RunFixture, token: string, events: string[]) {
  return appendEvents.run(redis, { keys: run.keys, args: { ...run.base, token, events } });
}

describe('appendEvents', () => {
  it('appends the events in order and publishes each, whoever owns the run when the token is empty', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      append(run, '', [
        'message.delta',
        '{"text":"a"}',
        'usage',
        '{"inputTokens":1,"outputTokens":0,"totalTokens":1}',
      ]),
    );
    expect(result).toBe(2);
    const events = await run.events();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'message.delta', data: { text: 'a' } },
      { type: 'usage', data: { inputTokens: 1, outputTokens: 0, totalTokens: 1 } },
    ]);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it("appends with the owner's token", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'waiting_for_input', owner: 'w1:t1' });
    expect(await append(run, 'w1:t1', ['message.delta', '{"text":"a"}'])).toBe(1);
    expect((await run.events()).map((event) => event.type)).toEqual(['message.delta']);
  });

  it("appends nothing with another worker's token", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w2:t2' });
    const before = await run.state();
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      append(run, 'w1:t1', ['message.delta', '{"text":"a"}']),
    );
    expect(result).toBeNull();
    expect(messages).toEqual([]);
    expect(await run.state()).toEqual(before);
  });

  it('appends nothing to a run that does not exist', async () => {
    const run = new RunFixture(redis);
    expect(await append(run, '', ['message.delta', '{"text":"a"}'])).toBeNull();
    expect(await redis.exists(run.keys.events)).toBe(0);
  });

  it.each(['completed', 'failed', 'cancelled'])('appends nothing once the run is %s', async (status) => {
    const run = new RunFixture(redis);
    await run.seed({ status });
    expect(await append(run, '', ['message.delta', '{"text":"a"}'])).toBeNull();
    expect(await run.events()).toEqual([]);
  });

  it('keeps about maxlen events: whole nodes of the log are dropped', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running' });
    const events = Array.from({ length: 250 }, () => ['message.delta', '{"text":"a"}']).flat();
    await appendEvents.run(redis, { keys: run.keys, args: { ...run.base, maxlen: 1, token: '', events } });
    expect(await redis.xlen(run.keys.events)).toBeLessThanOrEqual(100);
  });
});
