import { describe, expect, it } from 'vitest';
import { saveCheckpoint } from '../../src/runs/commands/scripts.js';
import { parseMessage, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function save(run: RunFixture, token: string, events: string[] = [], turn: string[] = [], taken = 0) {
  return saveCheckpoint.run(redis, {
    keys: run.keys,
    args: {
      ...run.base,
      token,
      checkpoint: '{"version":2}',
      todos: '[{"id":"1","content":"a","status":"pending"}]',
      usage: '{"inputTokens":5,"outputTokens":1,"totalTokens":6}',
      step: 7,
      profile: '',
      model: '',
      taken,
      turnCount: turn.length,
      rest: [...turn, ...events],
    },
  });
}

describe('saveCheckpoint', () => {
  it('appends and publishes the events, then saves the checkpoint, the todos, the usage and the step', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1', step: 6 });
    await redis.set(run.keys.checkpoint, '{"version":1}');
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      save(run, 'w1:t1', [
        'tool.result',
        '{"callId":"c1","name":"bash","ok":true,"content":"ok"}',
        'todo.updated',
        '{"todos":[]}',
      ]),
    );
    expect(result).toBe(1);
    expect(await redis.get(run.keys.checkpoint)).toBe('{"version":2}');
    expect(await run.record()).toEqual({
      status: 'running',
      owner: 'w1:t1',
      todos: '[{"id":"1","content":"a","status":"pending"}]',
      usage: '{"inputTokens":5,"outputTokens":1,"totalTokens":6}',
      step: '7',
    });
    const events = await run.events();
    expect(events.map((event) => event.type)).toEqual(['tool.result', 'todo.updated']);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
  });

  it('takes the oldest messages of the inbox it put in the transcript, and says how many still wait', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    await redis.rpush(run.keys.inbox, '{"messageId":"m1"}', '{"messageId":"m2"}', '{"messageId":"m3"}');
    // Saved: 1 and the messages waiting.
    expect(await save(run, 'w1:t1')).toBe(4);
    expect(await save(run, 'w1:t1', ['message.delivered', '{"messageId":"m1"}'], [], 2)).toBe(2);
    expect(await redis.lrange(run.keys.inbox, 0, -1)).toEqual(['{"messageId":"m3"}']);
    // A fenced worker takes nothing.
    expect(await save(run, 'w9:t9', [], [], 1)).toBe(0);
    expect(await redis.llen(run.keys.inbox)).toBe(1);
  });

  it("replaces a session run's turn with the one given, and leaves it be when none is", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    await redis.rpush(run.keys.turn, '{"role":"user","content":"old"}');
    const turn = ['{"role":"user","content":"hi"}', '{"role":"assistant","content":"hello"}'];
    expect(await save(run, 'w1:t1', ['todo.updated', '{"todos":[]}'], turn)).toBe(1);
    expect(await redis.lrange(run.keys.turn, 0, -1)).toEqual(turn);
    expect((await run.events()).map((event) => event.type)).toEqual(['todo.updated']);
    expect(await save(run, 'w1:t1')).toBe(1);
    expect(await redis.lrange(run.keys.turn, 0, -1)).toEqual(turn);
  });

  it('saves with no events to append', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1' });
    expect(await save(run, 'w1:t1')).toBe(1);
    expect(await redis.get(run.keys.checkpoint)).toBe('{"version":2}');
    expect(await redis.exists(run.keys.events)).toBe(0);
  });

  it("is 0 with another worker's token, and writes nothing", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w2:t2' });
    await redis.set(run.keys.checkpoint, '{"version":1}');
    expect(await run.unchanged(() => save(run, 'w1:t1', ['tool.result', '{}']))).toBe(0);
  });

  it('is 0 for a run that does not exist, and writes nothing', async () => {
    const run = new RunFixture(redis);
    expect(await save(run, 'w1:t1', ['tool.result', '{}'])).toBe(0);
    expect(await redis.exists(run.keys.record, run.keys.checkpoint, run.keys.events)).toBe(0);
  });

  it('is -1 when a cancel was requested, and writes nothing', async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1', cancelRequested: '1' });
    expect(await run.unchanged(() => save(run, 'w1:t1', ['tool.result', '{}']))).toBe(-1);
  });

  it.each(['completed', 'failed', 'cancelled'])(
    'is -1 once the run is %s, and writes nothing',
    async (status) => {
      const run = new RunFixture(redis);
      await run.seed({ status, owner: 'w1:t1' });
      expect(await run.unchanged(() => save(run, 'w1:t1', ['tool.result', '{}']))).toBe(-1);
    },
  );

  it('is -1 for a record with an owner but no status, and writes nothing', async () => {
    const run = new RunFixture(redis);
    await run.seed({ owner: 'w1:t1' });
    expect(await run.unchanged(() => save(run, 'w1:t1'))).toBe(-1);
  });
});
