/**
 * Client tools across a worker killed with -9 between the checkpoint that records a turn's client
 * calls and `requestToolCalls`, the step that asks the client for them. The window is held open by
 * the worker's `beforeToolRequest` hook (the harness's `holdBeforeToolRequest`), for the kill to
 * land in it every time: the checkpoint is saved, Redis knows no request.
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

describe('client tools, a worker killed with -9', () => {
  it('between the checkpoint and the request: the next worker requests each call once, with the same ids; each output is taken once and the run completes', async () => {
    const d = await deploy('client-kill');
    const a = await d.startWorker({}, { holdBeforeToolRequest: true });
    const runId = await d.submit(
      [
        { toolCalls: [call('get_weather', { city: 'Oslo' }), call('get_weather', { city: 'Rome' })] },
        { content: 'done' },
      ],
      { tools: [weather], toolTimeoutMs: 60_000 },
    );
    // Everything a client could see, from the start: each request it would act on.
    const seen: RunEvent[] = [];
    const unsubscribe = await d.hub.subscribe(runId, (event) => {
      seen.push(event);
    });
    try {
      await a.waitFor(/test hold: before requestToolCalls/);
      // The window: the calls are in the checkpoint, Redis has no request for them.
      const checkpoint = JSON.parse((await d.redis.get(d.keys.run(runId).checkpoint)) ?? '{}') as {
        waitpoint?: { requests: (PendingToolCall & { kind: string })[] };
      };
      const saved = (checkpoint.waitpoint?.requests ?? []).map(({ kind: _kind, ...call }) => call);
      expect(saved.map((c) => c.callId)).toEqual(['call_0_0', 'call_0_1']);
      expect(await d.redis.exists(d.keys.run(runId).waitpoint)).toBe(0);
      expect((await d.store.readEvents(runId)).some((e) => e.type === 'tool.requested')).toBe(false);
      a.child.kill('SIGKILL');
      await a.exited;

      await d.startWorker();
      await d.waitForEvent(
        runId,
        (e) => e.type === 'tool.requested' && (e.data as PendingToolCall).callId === 'call_0_1',
        30_000,
      );
      const requested = (await d.store.readEvents(runId))
        .filter((e) => e.type === 'tool.requested')
        .map((e) => e.data as PendingToolCall);
      // Once per call, with the ids and deadline the checkpoint holds.
      expect(requested).toEqual(saved);
      for (const request of requested) {
        await d.service.postToolOutput(
          TENANT,
          runId,
          request.requestId,
          `sunny in ${request.arguments.city}`,
        );
        // A second output for the same call is refused: the first was taken.
        await expect(
          d.service.postToolOutput(TENANT, runId, request.requestId, 'again'),
        ).rejects.toMatchObject({ code: 'ERR_TOOL_OUTPUT_ALREADY_POSTED' });
      }
      await d.waitForEvent(runId, 'run.completed', 30_000);
    } finally {
      await unsubscribe();
    }
    const events = await d.store.readEvents(runId);
    const byCall = (type: string) =>
      events.filter((e) => e.type === type).map((e) => (e.data as { callId: string }).callId);
    expect(byCall('tool.call')).toEqual(['call_0_0', 'call_0_1']);
    expect(byCall('tool.requested')).toEqual(['call_0_0', 'call_0_1']);
    expect(events.filter((e) => e.type === 'tool.output_received')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'tool.result').map((e) => e.data)).toEqual([
      { callId: 'call_0_0', name: 'get_weather', ok: true, content: 'sunny in Oslo' },
      { callId: 'call_0_1', name: 'get_weather', ok: true, content: 'sunny in Rome' },
    ]);
    expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
    // The live stream showed the client the same: one request per call id.
    expect(seen.filter((e) => e.type === 'tool.requested')).toHaveLength(2);
    expect((await d.store.get(runId))?.output).toBe('done');
  });
});
