import { describe, expect, it } from 'vitest';
import { createRun } from '../../src/runs/commands/scripts.js';
import { parseMessage, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function create(run: RunFixture, spec: string, metadata: string, multitask = 'enqueue') {
  return createRun.run(redis, {
    keys: run.scriptKeys,
    args: {
      ...run.base,
      spec,
      metadata,
      session: run.sessionId ?? '',
      multitask,
      input: run.sessionId ? `{"role":"user","content":"hi","runId":"${run.runId}"}` : '',
      runsChannel: run.keys.session.runsChannel,
      sessionTtl: 600,
      fields: ['id', run.runId, 'tenant', 'acme', 'status', 'queued', 'attempts', '0'],
    },
  });
}

describe('createRun', () => {
  it('writes the record, the spec and the metadata, and appends and publishes run.queued', async () => {
    const run = new RunFixture(redis);
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      create(run, '{"input":"hi"}', '{"team":"a"}'),
    );
    expect(await run.record()).toEqual({ id: run.runId, tenant: 'acme', status: 'queued', attempts: '0' });
    expect(await redis.get(run.keys.spec)).toBe('{"input":"hi"}');
    expect(await redis.get(run.keys.metadata)).toBe('{"team":"a"}');
    const events = await run.events();
    expect(events).toEqual([{ id: result, type: 'run.queued', data: {} }]);
    expect(messages.map(parseMessage)).toEqual([
      { id: result, runId: run.runId, type: 'run.queued', data: {} },
    ]);
  });

  it('writes no metadata key when there is none', async () => {
    const run = new RunFixture(redis);
    expect(await create(run, '{"input":"hi"}', '')).toEqual(expect.any(String));
    expect(await redis.exists(run.keys.metadata)).toBe(0);
  });

  it('changes nothing when a run with the id exists', async () => {
    const run = new RunFixture(redis);
    await create(run, '{"input":"first"}', '{"team":"a"}');
    const before = await run.state();
    const { result, messages } = await run.published(run.keys.eventsChannel, () =>
      create(run, '{"input":"second"}', '{"team":"b"}'),
    );
    expect(result).toBeNull();
    expect(messages).toEqual([]);
    expect(await run.state()).toEqual(before);
  });

  it("adds a session's run to the session: its runs, its queue, its input as its turn so far", async () => {
    const run = new RunFixture(redis, { session: true });
    const session = run.keys.session;
    expect(await run.unchanged(() => create(run, '{"input":"hi"}', ''))).toBe('no_session');
    await redis.hset(session.record, { id: run.sessionId as string, runCount: '0' });
    await redis.rpush(session.queue, 'run_live');
    expect(await run.unchanged(() => create(run, '{"input":"hi"}', '', 'reject'))).toBe('busy');
    const { result, messages } = await run.published(session.runsChannel, () =>
      create(run, '{"input":"hi"}', ''),
    );
    expect(result).toEqual(expect.stringMatching(/^\d+-\d+$/));
    expect(messages).toEqual([run.runId]);
    expect((await run.record()).session).toBe(run.sessionId);
    expect(await redis.lrange(session.queue, 0, -1)).toEqual(['run_live', run.runId]);
    expect(await redis.lrange(session.runs, 0, -1)).toEqual([run.runId]);
    expect(await redis.lrange(run.keys.turn, 0, -1)).toEqual([
      `{"role":"user","content":"hi","runId":"${run.runId}"}`,
    ]);
    expect(await redis.hmget(session.record, 'runCount', 'lastRunId')).toEqual(['1', run.runId]);
    expect(await redis.ttl(session.record)).toBeGreaterThan(500);
  });
});
