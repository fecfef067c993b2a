/**
 * Model fallback with a real worker process: a run whose profile's server fails (500) completes
 * on its fallback (an Anthropic-shaped fake), saying so, with the answering profile as its model;
 * the worker's breaker then sends the next run's turns straight to the fallback.
 */
import type { RunEvent } from '@tether/protocol';
import { anthropicText, startFakeAnthropic, startFakeOpenAI } from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

describe('model fallback', () => {
  it('completes a run on the fallback profile after a 500, and skips the failed profile on the next run', async () => {
    const openai = await startFakeOpenAI();
    const anthropic = await startFakeAnthropic();
    try {
      openai.enqueue({ kind: 'status', status: 500 });
      anthropic.enqueue(anthropicText('answered by the backup'));
      anthropic.enqueue(anthropicText('the backup again'));
      const d = await deploy('fallback');
      const profiles = [
        {
          name: 'primary',
          provider: 'openai',
          baseURL: openai.baseURL,
          model: 'gpt-x',
          apiKey: 'sk-a',
          maxRetries: 0,
          fallbacks: ['backup'],
        },
        {
          name: 'backup',
          provider: 'anthropic',
          baseURL: anthropic.baseURL,
          model: 'claude-x',
          apiKey: 'sk-b',
        },
      ];
      await d.startWorker({ TETHER_MODEL_PROFILES: JSON.stringify(profiles) });
      const submit = async (input: string) =>
        (await d.service.submit(TENANT, { input, model: { profile: 'primary' }, toolsets: ['planning'] })).run
          .id;

      const first = await submit('first');
      const done = (await d.waitForEvent(first, 'run.completed')) as RunEvent<'run.completed'>;
      expect(done.data.output).toBe('answered by the backup');
      const moved = (await d.store.readEvents(first)).filter((e) => e.type === 'model.fallback');
      expect(moved.map((e) => e.data)).toEqual([
        { from: 'primary', to: 'backup', reason: expect.stringMatching(/^ERR_MODEL_UNAVAILABLE: /) },
      ]);
      expect((await d.store.get(first))?.model).toEqual({ profile: 'backup', name: 'claude-x' });

      const second = await submit('second');
      await d.waitForEvent(second, 'run.completed');
      // The breaker remembered: the failed profile was not asked again.
      expect(openai.requests).toHaveLength(1);
      const skipped = (await d.store.readEvents(second)).find((e) => e.type === 'model.fallback');
      expect(skipped?.data).toMatchObject({
        from: 'primary',
        to: 'backup',
        reason: expect.stringMatching(/failed recently/),
      });
    } finally {
      await Promise.all([openai.close(), anthropic.close()]);
    }
  });
});
