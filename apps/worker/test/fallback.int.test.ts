/**
 * Model fallback with a real worker process: a run whose profile's server fails (500) completes
 * on its fallback (an Anthropic-shaped fake), saying so, with the answering profile as its model;
 * the worker's breaker then sends the next run's turns straight to the fallback.
 */
import type { RunEvent } from '@tether/protocol';
import {
  anthropicText,
  anthropicToolUse,
  freePort,
  startFakeAnthropic,
  startFakeOpenAI,
} from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

/** The worker's metrics, as Prometheus scrapes them. */
async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** The primary profile (OpenAI-compatible, no retries of its own) falling back to an Anthropic one. */
function chain(openaiURL: string, anthropicURL: string) {
  return [
    {
      name: 'primary',
      provider: 'openai',
      baseURL: openaiURL,
      model: 'gpt-x',
      apiKey: 'sk-a',
      maxRetries: 0,
      timeoutMs: 1_000,
      fallbacks: ['backup'],
    },
    { name: 'backup', provider: 'anthropic', baseURL: anthropicURL, model: 'claude-x', apiKey: 'sk-b' },
  ];
}

describe('model fallback', () => {
  it('completes a run on the fallback profile after a 500, and skips the failed profile on the next run', async () => {
    const openai = await startFakeOpenAI();
    const anthropic = await startFakeAnthropic();
    try {
      openai.enqueue({ kind: 'status', status: 500 });
      anthropic.enqueue(anthropicText('answered by the backup'));
      anthropic.enqueue(anthropicText('the backup again'));
      const d = await deploy('fallback');
      const port = await freePort();
      await d.startWorker({
        TETHER_MODEL_PROFILES: JSON.stringify(chain(openai.baseURL, anthropic.baseURL)),
        TETHER_METRICS_PORT: String(port),
      });
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
      // Both moves counted; the breaker is open (30 s by default).
      const metrics = await scrape(port);
      expect(metrics).toContain('tether_model_fallbacks_total{from="primary",to="backup"} 2');
      expect(metrics).toContain('tether_model_breaker_open{profile="primary"} 1');
    } finally {
      await Promise.all([openai.close(), anthropic.close()]);
    }
  });

  it('moves each turn on a 500, a 429 and a hang; with TETHER_MODEL_BREAKER_MS=0 each turn asks the first profile first', async () => {
    const openai = await startFakeOpenAI();
    const anthropic = await startFakeAnthropic();
    try {
      openai.enqueue(
        { kind: 'status', status: 500 },
        { kind: 'status', status: 429, headers: { 'retry-after': '0' } },
        { kind: 'hang' },
      );
      const todo = { name: 'todo', input: JSON.stringify({ todos: [] }) };
      anthropic.enqueue(
        anthropicToolUse([{ ...todo, id: 'toolu_1' }]),
        anthropicToolUse([{ ...todo, id: 'toolu_2' }]),
        anthropicText('done on the backup'),
      );
      const d = await deploy('fallback-each');
      const port = await freePort();
      // The breaker holds 0 ms: every turn asks the primary first.
      await d.startWorker({
        TETHER_MODEL_PROFILES: JSON.stringify(chain(openai.baseURL, anthropic.baseURL)),
        TETHER_MODEL_BREAKER_MS: '0',
        TETHER_METRICS_PORT: String(port),
      });
      const { run } = await d.service.submit(TENANT, {
        input: 'three turns',
        model: { profile: 'primary' },
        toolsets: ['planning'],
      });
      const done = (await d.waitForEvent(run.id, 'run.completed')) as RunEvent<'run.completed'>;
      expect(done.data.output).toBe('done on the backup');
      const reasons = (await d.store.readEvents(run.id))
        .filter((e) => e.type === 'model.fallback')
        .map((e) => (e as RunEvent<'model.fallback'>).data.reason.split(':')[0]);
      expect(reasons).toEqual(['ERR_MODEL_UNAVAILABLE', 'ERR_MODEL_RATE_LIMITED', 'ERR_MODEL_TIMEOUT']);
      expect(openai.requests.filter((r) => r.method === 'POST')).toHaveLength(3);
      const metrics = await scrape(port);
      expect(metrics).toContain('tether_model_fallbacks_total{from="primary",to="backup"} 3');
      expect(metrics).toContain('tether_model_breaker_open{profile="primary"} 0');
    } finally {
      await Promise.all([openai.close(), anthropic.close()]);
    }
  });
});
