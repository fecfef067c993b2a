/**
 * patches/bullmq@6.7.0.patch: a job moved to delayed and promoted at once by its processor (as an
 * attempt over its tenant's cap does when a slot was handed to it meanwhile) can be taken by another
 * slot of the same worker before the first processing's `finally` runs. BullMQ 6.7 then untracked
 * the job by id alone, which dropped the new processing's lock renewals: Tether's worker saw the lock
 * not renewed in time and stopped a healthy attempt (a flaky `tenant-lease.int.test.ts`), and without
 * that guard the lock would have expired under a live attempt. The patch untracks only the
 * processing's own token.
 */
import { testRedisUrl, uniquePrefix } from '@tether/testing';
import { DelayedError, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';

const connections: Redis[] = [];
const connect = () => {
  const redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
  connections.push(redis);
  return redis;
};

afterAll(async () => {
  await Promise.all(connections.map((redis) => redis.quit().catch(() => undefined)));
});

it('keeps renewing the lock of a job that another slot took again while the slot that delayed it was finishing', async () => {
  const prefix = uniquePrefix('locktrack');
  const queue = new Queue('lock-tracking', { connection: connect(), prefix });
  const processings = new Map<string, number>();
  const renewedLater = new Set<string>();
  const stalled: string[] = [];
  const lockDuration = 1000;
  const worker = new Worker(
    'lock-tracking',
    async (job, token) => {
      const id = job.id as string;
      const n = (processings.get(id) ?? 0) + 1;
      processings.set(id, n);
      if (n === 1) {
        // Delayed, then woken at once: the other slot, idle, takes it.
        await job.moveToDelayed(Date.now() + 60_000, token);
        await job.promote();
        throw new DelayedError();
      }
      // Its second processing outlives the lock twice over: only renewals keep it.
      await new Promise((resolve) => setTimeout(resolve, 2.5 * lockDuration));
      return 'done';
    },
    { connection: connect(), prefix, concurrency: 2, lockDuration, stalledInterval: 500 },
  );
  worker.on('locksRenewed', ({ jobIds }) => {
    for (const id of jobIds) if (processings.get(id) === 2) renewedLater.add(id);
  });
  worker.on('stalled', (id) => stalled.push(id));
  const completed = new Set<string>();
  const allDone = new Promise<void>((resolve) => {
    worker.on('completed', (job) => {
      completed.add(job.id as string);
      if (completed.size === 6) resolve();
    });
  });
  // One at a time, so that the other slot is idle when each is promoted.
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const job = await queue.add('job', { i });
    ids.push(job.id as string);
    while ((processings.get(job.id as string) ?? 0) < 2)
      await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await allDone;
  await worker.close();
  await queue.close();
  expect(stalled).toEqual([]);
  expect([...renewedLater].sort()).toEqual([...ids].sort());
}, 60_000);
