/**
 * A run's budgets (`limits`) with a real worker process: the token budget, the cost by its
 * profile's prices (a fake OpenAI-compatible server reporting usage) and the active time a run's
 * body gives reach its attempt, which stops at a turn boundary with the limit named.
 */
import type { RunEvent } from '@tether/protocol';
import { startFakeOpenAI, streamToolCalls } from '@tether/testing';
import { describe, expect, it } from 'vitest';
import { call, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

const todoTurn = (i: number) => ({
  toolCalls: [call('todo', { todos: [{ id: '1', content: `step ${i}`, status: 'pending' }] })],
});

describe('a run’s budgets', () => {
  it('stops a run past limits.maxTotalTokens at a turn boundary, saying which limit, its usage kept', async () => {
    const d = await deploy('budget-tokens');
    await d.startWorker();
    const runId = await d.submit(
      [...Array.from({ length: 20 }, (_, i) => todoTurn(i)), { content: 'done' }],
      { limits: { maxTotalTokens: 1 } },
    );
    const failed = (await d.waitForEvent(runId, 'run.failed')) as RunEvent<'run.failed'>;
    expect(failed.data.error).toMatchObject({ code: 'ERR_BUDGET_EXCEEDED' });
    expect(failed.data.error.message).toContain('limits.maxTotalTokens');
    const events = await d.store.readEvents(runId);
    // One model turn, its call and result, then the stop: never between a call and its result.
    expect(events.filter((e) => e.type === 'tool.call')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'tool.result')).toHaveLength(1);
    const run = await d.store.get(runId);
    expect(run?.usage?.totalTokens).toBeGreaterThanOrEqual(1);
  });

  it('stops a run past its own limits.wallClockMs of active time', async () => {
    const d = await deploy('budget-wall-clock');
    await d.startWorker();
    const runId = await d.submit(
      [{ toolCalls: [call('bash', { command: 'sleep 2' })] }, { content: 'done' }],
      { limits: { wallClockMs: 1_000 } },
    );
    const failed = (await d.waitForEvent(runId, 'run.failed')) as RunEvent<'run.failed'>;
    expect(failed.data.error).toMatchObject({ code: 'ERR_AGENT_WALL_CLOCK' });
    expect(failed.data.error.message).toContain('limit 1 s');
  });

  it('counts a priced profile’s cost into usage.costUsd and stops the run past limits.maxCostUsd', async () => {
    const fake = await startFakeOpenAI();
    try {
      for (let i = 0; i < 5; i++) {
        const turn = streamToolCalls([{ name: 'todo', arguments: JSON.stringify({ todos: [] }) }]);
        if (turn.kind === 'stream') turn.usage = { prompt_tokens: 1_000, completion_tokens: 100 };
        fake.enqueue(turn);
      }
      const d = await deploy('budget-cost');
      const profiles = [
        {
          name: 'priced',
          provider: 'openai',
          baseURL: fake.baseURL,
          model: 'm',
          apiKey: 'sk-fake',
          prices: { input: 2, output: 10 },
        },
      ];
      await d.startWorker({ TETHER_MODEL_PROFILES: JSON.stringify(profiles) });
      const { run } = await d.service.submit(TENANT, {
        input: 'spend',
        model: { profile: 'priced' },
        toolsets: ['planning'],
        limits: { maxCostUsd: 0.005 },
      });
      const failed = (await d.waitForEvent(run.id, 'run.failed')) as RunEvent<'run.failed'>;
      expect(failed.data.error).toMatchObject({ code: 'ERR_BUDGET_EXCEEDED' });
      expect(failed.data.error.message).toContain('limits.maxCostUsd');
      // Two turns of $0.003 each: the third was never asked for.
      expect(fake.requests).toHaveLength(2);
      expect((await d.store.get(run.id))?.usage?.costUsd).toBeCloseTo(0.006, 10);
    } finally {
      await fake.close();
    }
  });
});
