/**
 * Steering a live run with real worker processes: a message is taken at the next turn boundary
 * (after the model turn under way and its tool results, never between a call and its result), as
 * the user's; messages keep their order; a waiting run takes one when it wakes; an ended run takes
 * none; and a message the run never took says so, whatever the timing.
 */
import type { RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { call, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

/** The run's events of interest, as `type` or `type:messageId` / `type:callId`, in order. */
function story(events: RunEvent[]): string[] {
  const told: string[] = [];
  for (const event of events) {
    const data = event.data as { messageId?: string; callId?: string };
    if (event.type.startsWith('message.') && event.type !== 'message.delta' && data.messageId) {
      told.push(`${event.type}:${data.messageId}`);
    } else if (event.type === 'tool.call' || event.type === 'tool.result') {
      told.push(`${event.type}:${data.callId}`);
    } else if (
      ['message', 'clarify.requested', 'clarify.answered', 'run.completed', 'run.cancelled'].includes(
        event.type,
      )
    ) {
      told.push(event.type);
    }
  }
  return told;
}

describe('steering a live run', () => {
  it("takes messages in order at the next turn boundary, after the running call's result, as the user's", async () => {
    const d = await deploy('steer');
    await d.startWorker();
    const runId = await d.submit(
      [
        { toolCalls: [call('bash', { command: 'sleep 1; echo slept' }), call('list_dir', { path: '.' })] },
        { content: 'done' },
      ],
      { toolsets: ['base'] },
    );
    await d.waitForEvent(
      runId,
      (e) => e.type === 'tool.call' && (e.data as { name: string }).name === 'bash',
    );
    const first = await d.service.steer(TENANT, runId, 'Also check the logs');
    const second = await d.service.steer(TENANT, runId, 'And be brief');
    expect(first).toMatch(/^msg_[0-9a-z]{26}$/);
    await d.waitForEvent(runId, 'run.completed');
    expect(story(await d.store.readEvents(runId))).toEqual([
      'message',
      'tool.call:call_0_0',
      `message.received:${first}`,
      `message.received:${second}`,
      'tool.result:call_0_0',
      'tool.call:call_0_1',
      'tool.result:call_0_1',
      `message.delivered:${first}`,
      `message.delivered:${second}`,
      'message',
      'run.completed',
    ]);
    // In the transcript as the user's, after the turn's results, before the next model turn.
    const checkpoint = JSON.parse((await d.redis.get(d.keys.run(runId).checkpoint)) as string) as {
      messages: { role: string; content: string }[];
    };
    expect(checkpoint.messages.slice(-4).map(({ role, content }) => `${role}: ${content}`)).toEqual([
      expect.stringMatching(/^tool: /),
      'user: Also check the logs',
      'user: And be brief',
      'assistant: done',
    ]);
    expect(await d.redis.llen(d.keys.run(runId).inbox)).toBe(0);
    await expect(d.service.steer(TENANT, runId, 'too late')).rejects.toMatchObject({
      code: 'ERR_RUN_ENDED',
      statusCode: 409,
    });
    await expect(d.service.steer('tenant-b', runId, 'not yours')).rejects.toMatchObject({
      code: 'ERR_RUN_NOT_FOUND',
      statusCode: 404,
    });
  });

  it('a run waiting on a question takes a message when it wakes; one that ends first says it never took it', async () => {
    const d = await deploy('steer-wait');
    await d.startWorker();
    const asks = [
      { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
      { content: 'done' },
    ];
    const answered = await d.submit(asks);
    const cancelled = await d.submit(asks);
    const requested = await d.waitForEvent(answered, 'clarify.requested');
    await d.waitForEvent(cancelled, 'clarify.requested');
    const taken = await d.service.steer(TENANT, answered, 'Prefer dark colours');
    const dropped = await d.service.steer(TENANT, cancelled, 'Never mind');
    // Nothing wakes a waiting run: it still waits for its answer.
    expect((await d.store.get(answered))?.status).toBe('waiting_for_input');
    await d.service.answer(TENANT, answered, (requested.data as { requestId: string }).requestId, 'blue');
    await d.service.cancel(TENANT, cancelled);
    await d.waitForEvent(answered, 'run.completed');
    await d.waitForEvent(cancelled, 'run.cancelled');
    expect(story(await d.store.readEvents(answered)).slice(1)).toEqual([
      'tool.call:call_0_0',
      'clarify.requested',
      `message.received:${taken}`,
      'clarify.answered',
      'tool.result:call_0_0',
      `message.delivered:${taken}`,
      'message',
      'run.completed',
    ]);
    expect(story(await d.store.readEvents(cancelled)).slice(-3)).toEqual([
      `message.received:${dropped}`,
      `message.undelivered:${dropped}`,
      'run.cancelled',
    ]);
  });

  it('a message that arrives as the run ends is delivered or said undelivered, exactly once, never lost', async () => {
    const d = await deploy('steer-race');
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '4' });
    const script = [{ toolCalls: [call('bash', { command: 'sleep 0.2' })] }, { content: 'done' }];
    const runs = await Promise.all(Array.from({ length: 8 }, () => d.submit(script, { toolsets: ['base'] })));
    const sent = await Promise.all(
      runs.map(async (runId, i) => {
        await d.waitForEvent(runId, 'tool.call');
        await new Promise((resolve) => setTimeout(resolve, 30 * i));
        return d.service.steer(TENANT, runId, `message ${i}`).catch((error: { code?: string }) => error.code);
      }),
    );
    for (const [i, runId] of runs.entries()) {
      await d.waitForEvent(runId, 'run.completed');
      const told = story(await d.store.readEvents(runId));
      const messageId = sent[i] as string;
      if (messageId === 'ERR_RUN_ENDED') {
        expect(told.some((line) => line.startsWith('message.received'))).toBe(false);
        continue;
      }
      const fates = told.filter(
        (line) => line === `message.delivered:${messageId}` || line === `message.undelivered:${messageId}`,
      );
      expect(fates, `${runId}: ${told.join(', ')}`).toHaveLength(1);
      expect(told.at(-1)).toBe('run.completed');
    }
  });
});
