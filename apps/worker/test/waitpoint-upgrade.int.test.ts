import { describe, expect, it } from 'vitest';
import { call, useDeployments } from './harness.js';

const deploy = useDeployments();

/**
 * A run that waits across the upgrade to the waitpoint: suspended on a question and answered under
 * the release before it (its keys written here as that release's scripts wrote them), it is taken up
 * by a worker of this release, which moves the wait into the waitpoint before it takes any run.
 */
describe('a worker of the release with the waitpoint', () => {
  it('takes up a run the previous release suspended and answered, with its answer', async () => {
    const d = await deploy('upgrade');
    const before = await d.startWorker({ TETHER_WORKER_ID: 'worker-before' });
    const runId = await d.submit(
      [
        { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
        { content: 'done' },
      ],
      { clarify: { timeoutMs: 60_000 } },
    );
    const requested = await d.waitForEvent(runId, 'clarify.requested');
    const { requestId, expiresAt } = requested.data as { requestId: string; expiresAt: string };
    expect(await before.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    // What the previous release kept: the question's hash, answered (its `pending` string gone), the
    // run queued by the answer. No waitpoint, and the deployment not marked as moved.
    const keys = d.keys.run(runId);
    await d.redis.del(keys.waitpoint, `${d.keys.namespace}:{migrations}:waitpoint`);
    await d.redis.hset(keys.legacy.clarify(requestId), {
      requestId,
      status: 'answered',
      expiresAt: Date.parse(expiresAt),
      answer: 'blue',
    });
    await d.redis.hset(keys.record, 'status', 'queued');
    await d.service.engine.promote(runId);

    const after = await d.startWorker({ TETHER_WORKER_ID: 'worker-after' });
    await d.waitForEvent(runId, 'run.completed');
    await after.waitFor(
      /"moved":1,.*"msg":"moved the waits of runs of the previous release into their waitpoints"/,
    );
    const result = (await d.store.readEvents(runId)).find((e) => e.type === 'tool.result');
    expect((result?.data as { content: string } | undefined)?.content).toContain('blue');
    expect(await d.redis.exists(keys.legacy.clarify(requestId))).toBe(0);
    expect((await d.store.get(runId))?.output).toBe('done');
  });
});
