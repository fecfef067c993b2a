import { describe, expect, it } from 'vitest';
import { createRun } from '../../src/scripts.js';
import { parseMessage, RunFixture, useRedis } from './fixture.js';

const redis = useRedis();

function create(run: RunFixture, spec: string, metadata: string) {
  return createRun.run(redis, {
    keys: run.keys,
    args: {
      ...run.base,
      spec,
      metadata,
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
});
