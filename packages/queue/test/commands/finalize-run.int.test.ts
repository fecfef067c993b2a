import { describe, expect, it } from 'vitest';
import { finalizeRun } from '../../src/scripts.js';
import { parseMessage, REQUEST_ID, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();
/** A time the script set: epoch ms, by Redis's clock. */
const REDIS_NOW = expect.stringMatching(/^1\d{12}$/);
const RETENTION = 3_600;

interface End {
  token?: string;
  checkpoint?: string;
  fields?: string[];
  events?: string[];
  turn?: string[];
}

function finalize(run: RunFixture, end: End = {}) {
  const fields = end.fields ?? ['output', 'done'];
  return finalizeRun.run(redis, {
    keys: run.scriptKeys,
    args: {
      ...run.base,
      status: 'completed',
      eventType: 'run.completed',
      eventData: '{"output":"done"}',
      retention: RETENTION,
      token: end.token ?? '',
      checkpoint: end.checkpoint ?? '',
      sessionTtl: 600,
      parentId: '',
      parentChannel: '',
      childStatus: 'completed',
      childSummary: 'done',
      childUsage: '{}',
      turnCount: end.turn?.length ?? 0,
      fieldCount: fields.length / 2,
      pairs: [...fields, ...(end.turn ?? []), ...(end.events ?? [])],
    },
  });
}

/** A live run owned by w1:t1, with every key a run can have. */
async function live(): Promise<RunFixture> {
  const run = new RunFixture(redis);
  await run.seed({ status: 'running', owner: 'w1:t1', todos: '[]' });
  await redis.set(run.keys.spec, '{"input":"hi"}');
  await redis.set(run.keys.checkpoint, '{"version":1}');
  await redis.set(run.keys.metadata, '{"team":"a"}');
  await run.seedQuestion(Date.now() + 60_000);
  return run;
}

describe('finalizeRun', () => {
  it('ends the run: status, finishedAt and fields, owner gone, the events then the terminal one, then expiry', async () => {
    const run = await live();
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      finalize(run, {
        token: 'w1:t1',
        checkpoint: '{"version":2}',
        fields: ['output', 'done', 'todos', '[{"id":"1"}]', 'step', '4'],
        events: [
          'message',
          '{"role":"assistant","content":"done","toolCalls":[]}',
          'usage',
          '{"inputTokens":1,"outputTokens":2,"totalTokens":3}',
        ],
      }),
    );
    expect(await run.record()).toEqual({
      status: 'completed',
      finishedAt: REDIS_NOW,
      output: 'done',
      todos: '[{"id":"1"}]',
      step: '4',
    });
    expect(await redis.get(run.keys.checkpoint)).toBe('{"version":2}');
    expect(await redis.exists(run.keys.spec, run.keys.pending)).toBe(0);
    const events = await run.events();
    expect(events.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'message', data: { role: 'assistant', content: 'done', toolCalls: [] } },
      { type: 'usage', data: { inputTokens: 1, outputTokens: 2, totalTokens: 3 } },
      { type: 'run.completed', data: { output: 'done' } },
    ]);
    // No crew parent: nothing to report.
    expect(result).toEqual([events[2]?.id, '', '']);
    expect(messages.map(parseMessage)).toEqual(events.map((event) => ({ ...event, runId: run.runId })));
    for (const key of [run.keys.record, run.keys.events, run.keys.checkpoint, run.keys.metadata]) {
      expect(await redis.ttl(key)).toBeGreaterThan(RETENTION - 10);
      expect(await redis.ttl(key)).toBeLessThanOrEqual(RETENTION);
    }
    // The clarify request keeps the expiry it was given.
    expect(await redis.ttl(run.keys.clarify(REQUEST_ID))).toBe(-1);
  });

  it("keeps a failed or cancelled run's spec and submitted files for the retention (a retry starts from them); a completed run's go", async () => {
    for (const status of ['failed', 'cancelled', 'completed'] as const) {
      const run = await live();
      await redis.set(run.keys.files, '{"a.txt":"A"}');
      const ended = await finalizeRun.run(redis, {
        keys: run.scriptKeys,
        args: {
          ...run.base,
          status,
          eventType: `run.${status}`,
          eventData: {
            completed: '{"output":"done"}',
            failed: '{"error":{"code":"ERR_X","message":"broke"}}',
            cancelled: '{}',
          }[status],
          retention: RETENTION,
          token: '',
          checkpoint: '',
          sessionTtl: 600,
          parentId: '',
          parentChannel: '',
          childStatus: status,
          childSummary: '',
          childUsage: '{}',
          turnCount: 0,
          fieldCount: 0,
          pairs: [],
        },
      });
      expect(Array.isArray(ended)).toBe(true);
      if (status === 'completed') {
        expect(await redis.exists(run.keys.spec, run.keys.files)).toBe(0);
        continue;
      }
      expect(await redis.get(run.keys.spec)).toBe('{"input":"hi"}');
      expect(await redis.get(run.keys.files)).toBe('{"a.txt":"A"}');
      for (const key of [run.keys.spec, run.keys.files]) {
        expect(await redis.ttl(key)).toBeGreaterThan(RETENTION - 10);
        expect(await redis.ttl(key)).toBeLessThanOrEqual(RETENTION);
      }
      expect(await redis.exists(run.keys.pending)).toBe(0);
    }
  });

  it("answers the run's tenant with the end", async () => {
    const run = new RunFixture(redis);
    await run.seed({ status: 'running', owner: 'w1:t1', tenant: 'acme' });
    expect(await finalize(run)).toEqual([expect.any(String), '', 'acme']);
  });

  it('ends the run whoever owns it when the token is empty, keeps the stored checkpoint without a new one', async () => {
    const run = await live();
    expect(await finalize(run, { fields: [] })).toEqual([expect.any(String), '', '']);
    expect(await run.record()).toEqual({ status: 'completed', finishedAt: REDIS_NOW, todos: '[]' });
    expect(await redis.get(run.keys.checkpoint)).toBe('{"version":1}');
    expect((await run.events()).map((event) => event.type)).toEqual(['run.completed']);
  });

  it('rewrites a log of up to 100 events at its real size', async () => {
    const run = await live();
    await run.fillLog(99);
    await finalize(run);
    expect(await redis.xlen(run.keys.events)).toBe(100);
    expect(await run.logIsCompact()).toBe(true);
  });

  it('leaves a longer log as it is', async () => {
    const run = await live();
    await run.fillLog(100);
    await finalize(run);
    expect(await redis.xlen(run.keys.events)).toBe(101);
    expect(await run.logIsCompact()).toBe(false);
  });

  it("is -1 with another worker's token, and changes nothing", async () => {
    const run = await live();
    expect(await run.unchanged(() => finalize(run, { token: 'w2:t2', events: ['message', '{}'] }))).toBe(-1);
  });

  it.each(['completed', 'failed', 'cancelled'])(
    'is 0 once the run is %s, and changes nothing',
    async (status) => {
      const run = await live();
      await run.seed({ status });
      expect(await run.unchanged(() => finalize(run, { events: ['message', '{}'] }))).toBe(0);
    },
  );

  it('is 0 for a run that does not exist, and writes nothing', async () => {
    const run = new RunFixture(redis);
    expect(await finalize(run, { events: ['message', '{}'] })).toBe(0);
    expect(await redis.exists(run.keys.record, run.keys.events)).toBe(0);
  });

  it("a session's run: its turn moves into the transcript and it leaves the queue, in the same step", async () => {
    const run = new RunFixture(redis, { session: true });
    const session = run.keys.session;
    await run.seed({ status: 'running', owner: 'w1:t1', session: run.sessionId as string });
    await redis.hset(session.record, { id: run.sessionId as string, updatedAt: '1' });
    await redis.rpush(session.transcript, '{"role":"user","content":"before"}');
    await redis.rpush(session.queue, run.runId, 'run_next');
    await redis.rpush(run.keys.turn, '{"role":"user","content":"saved"}');
    const turn = ['{"role":"user","content":"hi"}', '{"role":"assistant","content":"hello"}'];
    expect(
      await finalize(run, {
        token: 'w1:t1',
        turn,
        events: ['usage', '{"inputTokens":1,"outputTokens":1,"totalTokens":2}'],
      }),
    ).toEqual([expect.stringMatching(/^\d+-\d+$/), '', '']);
    expect(await redis.lrange(session.transcript, 0, -1)).toEqual([
      '{"role":"user","content":"before"}',
      ...turn,
    ]);
    expect(await redis.lrange(session.queue, 0, -1)).toEqual(['run_next']);
    expect(await redis.exists(run.keys.turn)).toBe(0);
    expect(await redis.hget(session.record, 'updatedAt')).toEqual(REDIS_NOW);
    expect(await redis.ttl(session.transcript)).toBeGreaterThan(500);
    expect((await run.events()).map((event) => event.type)).toEqual(['usage', 'run.completed']);

    // Ended already: the transcript is not written twice.
    expect(await finalize(run, { turn })).toBe(0);
    expect(await redis.llen(session.transcript)).toBe(3);
  });

  it("a session's run ended by another (no turn given): the turn its last save stored moves", async () => {
    const run = new RunFixture(redis, { session: true });
    await run.seed({ status: 'waiting_for_input', session: run.sessionId as string });
    await redis.rpush(run.keys.session.queue, run.runId);
    await redis.rpush(run.keys.turn, '{"role":"user","content":"saved"}');
    expect(await finalize(run)).toEqual([expect.stringMatching(/^\d+-\d+$/), '', '']);
    expect(await redis.lrange(run.keys.session.transcript, 0, -1)).toEqual([
      '{"role":"user","content":"saved"}',
    ]);
    expect(await redis.llen(run.keys.session.queue)).toBe(0);
  });
});
