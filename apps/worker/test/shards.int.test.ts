import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createKeys } from '@tether/store/redis';
import { RunService } from '@tether/store/runs';
import { describe, expect, it } from 'vitest';
import { call, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();

const clarifyScript = () => [
  { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
  { content: 'done' },
];

/** Submits until every shard has a run; returns the runs by shard. */
async function oneRunPerShard(d: Awaited<ReturnType<typeof deploy>>, submit: () => Promise<string>) {
  const byShard = new Map<number, string>();
  for (let i = 0; i < 200 && byShard.size < d.keys.shards; i++) {
    const runId = await submit();
    const shard = d.keys.shardOf(runId);
    if (!byShard.has(shard)) byShard.set(shard, runId);
    else await d.service.cancel(TENANT, runId);
  }
  expect(byShard.size).toBe(d.keys.shards);
  return byShard;
}

describe('sharded queues (TETHER_QUEUE_SHARDS=3)', () => {
  it('puts each run in its own shard, remembered in its record, and a worker takes every shard', async () => {
    const d = await deploy('shards', { shards: 3 });
    const ids = await Promise.all(Array.from({ length: 30 }, () => d.submit([{ content: 'done' }])));
    for (const runId of ids) {
      const shard = d.keys.shardOf(runId);
      expect((await d.store.get(runId))?.queue).toBe(d.keys.shardPrefix(shard));
      expect(await d.service.queues[shard]?.getJob(runId)).toBeDefined();
      for (const other of [0, 1, 2].filter((s) => s !== shard)) {
        expect(await d.service.queues[other]?.getJob(runId)).toBeUndefined();
      }
    }
    expect(new Set(ids.map((id) => d.keys.shardOf(id))).size).toBe(3);
    await d.startWorker();
    await Promise.all(ids.map((runId) => d.waitForEvent(runId, 'run.completed')));
  });

  it("answers, cancels and promotes reach the run's own shard", async () => {
    const d = await deploy('shards-clarify', { shards: 3 });
    const submit = () => d.submit(clarifyScript(), { clarify: { timeoutMs: 60_000 } });
    // Cancelled while queued (no worker yet): its job leaves its own shard.
    const queued = await oneRunPerShard(d, submit);
    for (const [shard, runId] of queued) {
      expect(await d.service.cancel(TENANT, runId)).toBe('queued');
      expect(await d.service.queues[shard]?.getJob(runId)).toBeUndefined();
      expect((await d.store.get(runId))?.status).toBe('cancelled');
    }
    // Suspended in each shard, then answered: the answer wakes the delayed job of its shard.
    await d.startWorker();
    const waiting = await oneRunPerShard(d, submit);
    for (const [shard, runId] of waiting) {
      const requested = await d.waitForEvent(runId, 'clarify.requested');
      await until(
        async () => (await (await d.service.queues[shard]?.getJob(runId))?.getState()) === 'delayed',
        'the job to be delayed in its shard',
      );
      await d.service.answer(TENANT, runId, (requested.data as { requestId: string }).requestId, 'red');
      await d.waitForEvent(runId, 'run.completed', 10_000);
    }
  });

  it('a worker given TETHER_WORKER_SHARDS takes jobs of those shards only', async () => {
    const d = await deploy('shards-some', { shards: 3 });
    const runs = await oneRunPerShard(d, () => d.submit([{ content: 'done' }]));
    await d.startWorker({ TETHER_WORKER_SHARDS: '1' });
    await d.waitForEvent(runs.get(1) as string, 'run.completed');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await d.store.get(runs.get(0) as string))?.status).toBe('queued');
    expect((await d.store.get(runs.get(2) as string))?.status).toBe('queued');
  });

  it('reaches a run queued before a resize in the queue its record names', async () => {
    const d = await deploy('shards-resize');
    const before = await d.submit([{ content: 'done' }]);
    expect((await d.store.get(before))?.queue).toBe(d.prefix);
    // The same deployment, now with three shards: the old run is still found in the old queue.
    const resized = new RunService({ redis: d.redis, keys: createKeys(d.prefix, 3), store: d.store });
    try {
      expect((await resized.getJob(before))?.id).toBe(before);
      expect(await resized.cancel(TENANT, before)).toBe('queued');
      expect(await resized.getJob(before)).toBeUndefined();
      expect((await d.store.get(before))?.status).toBe('cancelled');
    } finally {
      await resized.close();
    }
  });

  it('recovers a run of any shard from a worker killed with kill -9', async () => {
    const d = await deploy('shards-kill', { shards: 3 });
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const runs = await oneRunPerShard(d, () =>
      d.submit([
        {
          toolCalls: [
            call('bash', { command: '[ -f started ] && echo again || { touch started; sleep 30; }' }),
          ],
        },
        { content: 'recovered' },
      ]),
    );
    for (const runId of runs.values()) {
      await until(() => existsSync(join(d.workspaceRoot, runId, 'started')), 'the command to start');
    }
    await a.stop('SIGKILL');
    await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    for (const runId of runs.values()) {
      const done = await d.waitForEvent(runId, 'run.completed', 30_000);
      expect(done.data).toEqual({ output: 'recovered' });
    }
  });
});
