/**
 * Client-executed tools with real worker processes: the run waits for the
 * client's outputs as it waits for a clarify answer (no slot held), and
 * survives the same faults: outputs or the deadline with no worker alive,
 * racing outputs, a resume on another worker, a cancel while it waits.
 */
import type { ClientTool, PendingToolCall, RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { call, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

const weather: ClientTool = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

/** A turn calling the client tool for two cities (and once with invalid arguments), then an answer. */
const twoCities = [
  {
    toolCalls: [
      call('get_weather', { city: 'Oslo' }),
      call('get_weather', { town: 'Nowhere' }),
      call('get_weather', { city: 'Rome' }),
    ],
  },
  { content: 'done' },
];

const requestsOf = (events: RunEvent[]) =>
  events.filter((e) => e.type === 'tool.requested').map((e) => e.data as PendingToolCall);

describe('client tools', () => {
  it('requests every valid call of a turn at once, never the invalid one, and resumes only after both outputs', async () => {
    const d = await deploy('client-tools');
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '1' });
    const runId = await d.submit(twoCities, { tools: [weather], toolTimeoutMs: 60_000 });
    await d.waitForEvent(
      runId,
      (e) => e.type === 'tool.requested' && (e.data as PendingToolCall).callId === 'call_0_2',
    );
    const events = await d.store.readEvents(runId);
    const requests = requestsOf(events);
    expect(requests.map(({ callId, arguments: args }) => ({ callId, args }))).toEqual([
      { callId: 'call_0_0', args: { city: 'Oslo' } },
      { callId: 'call_0_2', args: { city: 'Rome' } },
    ]);
    // The invalid call went back to the model before the others were requested.
    const invalid = events.find((e) => e.type === 'tool.result');
    expect(invalid?.data).toMatchObject({ callId: 'call_0_1', ok: false });
    const [oslo, rome] = requests as [PendingToolCall, PendingToolCall];
    const waiting = await d.store.get(runId);
    expect(waiting?.status).toBe('waiting_for_input');
    expect(waiting?.pendingToolCalls).toEqual(requests);

    // No slot held: another run completes meanwhile.
    const other = await d.submit([{ content: 'second done' }]);
    await d.waitForEvent(other, 'run.completed');

    await d.service.postToolOutput(TENANT, runId, rome.requestId, 'sunny', false);
    const afterOne = await d.store.get(runId);
    expect(afterOne?.status).toBe('waiting_for_input');
    expect(afterOne?.pendingToolCalls).toEqual([oslo]);
    await d.service.postToolOutput(TENANT, runId, oslo.requestId, 'no such city', true);
    await d.waitForEvent(runId, 'run.completed');
    const results = (await d.store.readEvents(runId))
      .filter((e) => e.type === 'tool.result')
      .map((e) => e.data);
    expect(results).toEqual([
      expect.objectContaining({ callId: 'call_0_1', ok: false }),
      { callId: 'call_0_0', name: 'get_weather', ok: false, content: 'no such city' },
      { callId: 'call_0_2', name: 'get_weather', ok: true, content: 'sunny' },
    ]);
    expect((await d.store.get(runId))?.pendingToolCalls).toBeUndefined();
  });

  it('of ten concurrent outputs for one call, exactly one wins', async () => {
    const d = await deploy('client-race');
    await d.startWorker();
    const runId = await d.submit(
      [{ toolCalls: [call('get_weather', { city: 'Oslo' })] }, { content: 'ok' }],
      {
        tools: [weather],
      },
    );
    const requested = await d.waitForEvent(runId, 'tool.requested');
    const { requestId } = requested.data as PendingToolCall;
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => d.service.postToolOutput(TENANT, runId, requestId, `output ${i}`)),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const lost of results.filter((r) => r.status === 'rejected')) {
      expect((lost as PromiseRejectedResult).reason).toMatchObject({
        code: 'ERR_TOOL_OUTPUT_ALREADY_POSTED',
        statusCode: 409,
      });
    }
    await d.waitForEvent(runId, 'run.completed');
    const events = await d.store.readEvents(runId);
    expect(events.filter((e) => e.type === 'tool.output_received')).toHaveLength(1);
    await expect(
      d.service.postToolOutput(TENANT, runId, 'tcr_0000000000aaaaaaaaaaaaaaaa', 'x'),
    ).rejects.toMatchObject({ code: 'ERR_TOOL_OUTPUT_UNKNOWN', statusCode: 404 });
    await expect(d.service.postToolOutput('tenant-b', runId, requestId, 'x')).rejects.toMatchObject({
      code: 'ERR_RUN_NOT_FOUND',
      statusCode: 404,
    });
  });

  it('outputs posted with no worker alive resume the run on another worker', async () => {
    const d = await deploy('client-handover');
    const a = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const runId = await d.submit(twoCities, { tools: [weather], toolTimeoutMs: 60_000 });
    await d.waitForEvent(
      runId,
      (e) => e.type === 'tool.requested' && (e.data as PendingToolCall).callId === 'call_0_2',
    );
    expect(await a.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    for (const request of requestsOf(await d.store.readEvents(runId))) {
      await d.service.postToolOutput(
        TENANT,
        runId,
        request.requestId,
        `weather in ${String(request.arguments.city)}`,
      );
    }
    expect((await d.store.get(runId))?.status).toBe('queued');
    const b = await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    await d.waitForEvent(runId, 'run.completed');
    await b.waitFor(new RegExp(`"runId":"${runId}".*"msg":"run completed"`));
    const started = (await d.store.readEvents(runId)).filter((e) => e.type === 'attempt.started');
    expect(started.map((e) => e.data)).toEqual([
      { attempt: 1, resumed: false, step: 0 },
      { attempt: 1, resumed: true, step: 1 },
    ]);
  });

  it('the deadline passing with no worker alive: the next worker times the calls out, and a late output is refused', async () => {
    const d = await deploy('client-deadline');
    const a = await d.startWorker();
    const runId = await d.submit(
      [{ toolCalls: [call('get_weather', { city: 'Oslo' })] }, { content: 'ok' }],
      {
        tools: [weather],
        toolTimeoutMs: 1_000,
      },
    );
    const requested = await d.waitForEvent(runId, 'tool.requested');
    expect(await a.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const { requestId } = requested.data as PendingToolCall;
    await expect(d.service.postToolOutput(TENANT, runId, requestId, 'late')).rejects.toMatchObject({
      code: 'ERR_TOOL_OUTPUT_EXPIRED',
      statusCode: 409,
    });
    await d.startWorker();
    await d.waitForEvent(runId, 'tool.timed_out');
    await d.waitForEvent(runId, 'run.completed');
    const result = (await d.store.readEvents(runId)).find((e) => e.type === 'tool.result');
    expect(result?.data).toMatchObject({ ok: false, content: expect.stringContaining('no result in time') });
    await expect(d.service.postToolOutput(TENANT, runId, requestId, 'later')).rejects.toMatchObject({
      code: 'ERR_TOOL_OUTPUT_TIMED_OUT',
    });
  });

  it('cancels a run waiting for tool outputs; its calls no longer take outputs', async () => {
    const d = await deploy('client-cancel');
    await d.startWorker();
    const runId = await d.submit(
      [{ toolCalls: [call('get_weather', { city: 'Oslo' })] }, { content: 'never' }],
      {
        tools: [weather],
      },
    );
    const requested = await d.waitForEvent(runId, 'tool.requested');
    expect(await d.service.cancel(TENANT, runId)).toBe('waiting_for_input');
    await d.waitForEvent(runId, 'run.cancelled', 5_000);
    await expect(
      d.service.postToolOutput(TENANT, runId, (requested.data as PendingToolCall).requestId, 'late'),
    ).rejects.toMatchObject({ code: 'ERR_TOOL_OUTPUT_NOT_PENDING', statusCode: 409 });
    expect((await d.store.readEvents(runId)).at(-1)?.type).toBe('run.cancelled');
  });
});
