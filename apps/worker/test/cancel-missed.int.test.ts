/**
 * A cancel whose broadcast the worker missed (pub/sub keeps nothing for a subscriber that was
 * reconnecting): the attempt learns of it at its next lock renewal, not only at its next save. And
 * one an API began and did not finish (it died): a worker finishes it.
 */
import { describe, expect, it } from 'vitest';
import { call, useDeployments } from './harness.js';

const deploy = useDeployments();

describe('a cancel whose broadcast was missed', () => {
  it('stops the attempt at its next lock renewal, its command killed, and the run ends cancelled (an interrupt waits for its save)', async () => {
    const d = await deploy('cancel-missed');
    // A 2 s lock: renewed about every second.
    await d.startWorker();
    const runId = await d.submit([
      { toolCalls: [call('bash', { command: 'sleep 60' })] },
      { content: 'never' },
    ]);
    await d.waitForEvent(runId, 'tool.call');
    // An interrupt (no broadcast by design) waits for the attempt's next save: renewals leave it be.
    await d.redis.hset(d.keys.run(runId).record, 'cancelRequested', 'interrupt');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect((await d.store.readEvents(runId)).map((event) => event.type)).not.toContain('tool.result');
    // The flag as the API's cancel sets it, without its broadcast.
    await d.redis.hset(d.keys.run(runId).record, 'cancelRequested', '1');
    // Without the renewal's look, the run would end only once the 60 s command did.
    await d.waitForEvent(runId, 'run.cancelled', 10_000);
  });
});

describe('a cancel its process left unfinished', () => {
  it('is finished by a worker: the run, its job taken off the queue by an API that then died, ends cancelled', async () => {
    const d = await deploy('cancel-unfinished');
    const runId = await d.submit([{ content: 'never' }]);
    // What the API did before it died: the flag, the run among the cancels in flight, the job removed.
    await d.store.requestCancel(runId);
    await d.redis.zadd(d.keys.cancelsInFlight, Date.now() - 60_000, runId);
    await (await d.service.getJob(runId))?.remove();
    // Its workers look once a lock (2 s here) for cancels in flight for longer than 10 s.
    const worker = await d.startWorker();
    await d.waitForEvent(runId, 'run.cancelled', 10_000);
    await worker.waitFor(/finished cancels that a process left unfinished/);
    expect(await d.redis.zcard(d.keys.cancelsInFlight)).toBe(0);
  });
});
