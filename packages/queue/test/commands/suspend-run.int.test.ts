import { describe, expect, it } from 'vitest';
import { suspendRun } from '../../src/scripts.js';
import { parseMessage, REQUEST_ID, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();
const QUESTION = JSON.stringify({
  requestId: REQUEST_ID,
  question: 'Which "colour"?',
  choices: ['red', 'blue'],
  expiresAt: '2030-01-01T00:00:00.000Z',
});

function suspend(run: RunFixture, token: string, events: string[] = []) {
  return suspendRun.run(redis, {
    keys: run.clarifyKeys,
    args: {
      ...run.base,
      token,
      requestId: REQUEST_ID,
      expiresAt: 1_893_456_000_000,
      pending: QUESTION,
      clarifyTtl: 600,
      events,
    },
  });
}

describe('suspendRun', () => {
  it('records the request and the question, waits for input, appends the events then clarify.requested', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      suspend(run, 'w1:t1', ['message', '{"role":"assistant","content":"hm","toolCalls":[]}']),
    );
    expect(await run.request()).toEqual({
      requestId: REQUEST_ID,
      status: 'pending',
      expiresAt: '1893456000000',
    });
    expect(await redis.ttl(run.keys.clarify(REQUEST_ID))).toBeGreaterThan(590);
    expect(await redis.ttl(run.keys.clarify(REQUEST_ID))).toBeLessThanOrEqual(600);
    expect(await redis.get(run.keys.pending)).toBe(QUESTION);
    expect((await run.record()).status).toBe('waiting_for_input');
    const events = await run.events();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'message', data: { role: 'assistant', content: 'hm', toolCalls: [] } },
      { type: 'clarify.requested', data: JSON.parse(QUESTION) },
    ]);
    expect(result).toBe(events[1]?.id);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it('rewrites a log of up to 100 events at its real size', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    await run.fillLog(99);
    await suspend(run, 'w1:t1');
    expect(await redis.xlen(run.keys.events)).toBe(100);
    expect(await run.logIsCompact()).toBe(true);
  });

  it('leaves a longer log as it is', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    await run.fillLog(100);
    await suspend(run, 'w1:t1');
    expect(await redis.xlen(run.keys.events)).toBe(101);
    expect(await run.logIsCompact()).toBe(false);
  });

  it("is 0 with another worker's token, and writes nothing", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w2:t2' });
    expect(await run.unchanged(() => suspend(run, 'w1:t1', ['message', '{}']))).toBe(0);
  });

  it('is -1 when a cancel was requested, and writes nothing', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1', cancelRequested: '1' });
    expect(await run.unchanged(() => suspend(run, 'w1:t1', ['message', '{}']))).toBe(-1);
  });

  it.each(['completed', 'failed', 'cancelled'])(
    'is -1 once the run is %s, and writes nothing',
    async (status) => {
      const run = new RunFixture(redis);
      await run.seed({ status, owner: 'w1:t1' });
      expect(await run.unchanged(() => suspend(run, 'w1:t1'))).toBe(-1);
    },
  );

  it('is -1 for a record with an owner but no status, and writes nothing', async () => {
    const run = new RunFixture(redis);
    await run.seed({ owner: 'w1:t1' });
    expect(await run.unchanged(() => suspend(run, 'w1:t1'))).toBe(-1);
  });
});
