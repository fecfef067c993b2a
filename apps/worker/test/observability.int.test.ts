/**
 * The worker's metrics (TETHER_METRICS_PORT) read off its /metrics after scripted runs, the request
 * id and run id on its log lines, and a clear refusal of a metrics port in use.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  freePort,
  spawnNode,
  startFakeOpenAI,
  streamText,
  streamToolCalls,
  testRedisEnv,
} from '@tether/testing';
import { WORKER_MAIN } from '@tether/testing/scripts';
import { describe, expect, it } from 'vitest';
import { call, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

/** The value of the sample `name{labels}` in a Prometheus text page, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('worker metrics', () => {
  it('counts runs, attempts, tool calls, model requests, latency, first token, tokens and clarify waits', async () => {
    const fake = await startFakeOpenAI();
    try {
      // The model's first try is refused (429), then it calls two tools, then answers: slowly enough
      // that the first token comes well before the whole answer.
      fake.enqueue(
        { kind: 'status', status: 429, headers: { 'retry-after-ms': '10' } },
        streamToolCalls(
          [
            { id: 'c1', name: 'write_file', arguments: '{"path":"a.txt","content":"a"}' },
            { id: 'c2', name: 'read_file', arguments: '{"path":"missing.txt"}' },
          ],
          { chunkDelayMs: 20 },
        ),
        streamText('done', { chunkDelayMs: 40 }),
      );
      const d = await deploy('obs-metrics');
      const port = await freePort();
      const worker = await d.startWorker({
        TETHER_METRICS_PORT: String(port),
        TETHER_METRICS_TENANT_LABEL: '1',
        TETHER_MODEL: 'fake-model',
        OPENAI_BASE_URL: fake.baseURL,
        OPENAI_API_KEY: 'sk-fake',
      });
      const t = `tenant="${TENANT}"`;

      // A run on the model profile, submitted by a request whose id its log lines must carry.
      const { run } = await d.service.submit(TENANT, { input: 'write a.txt' }, { requestId: 'req-obs-1' });
      // A run that asks a question, answered; and one whose script runs out (failed).
      const asks = await d.submit([
        { toolCalls: [call('clarify', { question: 'Which?' })] },
        { content: 'ok' },
      ]);
      const fails = await d.submit([{ toolCalls: [call('todo', { todos: [] })] }]);
      const requested = await d.waitForEvent(asks, 'clarify.requested');
      await d.service.answer(TENANT, asks, (requested.data as { requestId: string }).requestId, 'this one');
      for (const id of [run.id, asks]) await d.waitForEvent(id, 'run.completed');
      await d.waitForEvent(fails, 'run.failed');

      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      const text = await response.text();
      const at = (series: string) => sample(text, series);
      expect(at(`tether_runs_finished_total{status="completed",${t}}`)).toBe(2);
      expect(at(`tether_runs_finished_total{status="failed",${t}}`)).toBe(1);
      expect(at(`tether_run_duration_seconds_count{${t}}`)).toBe(3);
      expect(at(`tether_attempts_total{outcome="completed",${t}}`)).toBe(2);
      expect(at(`tether_attempts_total{outcome="suspended",${t}}`)).toBe(1);
      expect(at(`tether_attempts_total{outcome="failed",${t}}`)).toBe(1);
      expect(at(`tether_tool_calls_total{tool="write_file",outcome="ok",${t}}`)).toBe(1);
      expect(at(`tether_tool_calls_total{tool="read_file",outcome="error",${t}}`)).toBe(1);
      expect(at(`tether_tool_calls_total{tool="todo",outcome="ok",${t}}`)).toBe(1);
      expect(at(`tether_tool_duration_seconds_count{tool="write_file",${t}}`)).toBe(1);
      expect(at(`tether_model_requests_total{profile="default",outcome="rate_limited",${t}}`)).toBe(1);
      expect(at(`tether_model_requests_total{profile="default",outcome="ok",${t}}`)).toBe(2);
      expect(at(`tether_model_requests_total{profile="replay",outcome="ok",${t}}`)).toBe(3);
      expect(at(`tether_model_requests_total{profile="replay",outcome="replay_exhausted",${t}}`)).toBe(1);
      expect(at(`tether_model_latency_seconds_count{profile="default",${t}}`)).toBe(2);
      expect(at(`tether_model_time_to_first_token_seconds_count{profile="default",${t}}`)).toBe(2);
      const latency = at(`tether_model_latency_seconds_sum{profile="default",${t}}`) as number;
      const firstToken = at(`tether_model_time_to_first_token_seconds_sum{profile="default",${t}}`) as number;
      expect(firstToken).toBeGreaterThan(0.05);
      expect(firstToken).toBeLessThan(latency - 0.05);
      // The fake model reports 11 input and 7 output tokens per answer.
      expect(at(`tether_tokens_total{profile="default",kind="input",${t}}`)).toBe(22);
      expect(at(`tether_tokens_total{profile="default",kind="output",${t}}`)).toBe(14);
      expect(at(`tether_clarify_wait_seconds_count{${t}}`)).toBe(1);
      // The only process of this deployment reads the queue's counts; nothing is left in it.
      expect(at('tether_queue_jobs{state="waiting"}')).toBe(0);
      expect(at('tether_queue_jobs{state="active"}')).toBe(0);
      expect(text).toContain('# TYPE tether_webhook_deliveries_total counter');
      // Bounded labels: no run id anywhere.
      expect(text).not.toMatch(/run_[0-9a-z]{26}/);

      // Every line about the submitted run names it, and the request that submitted it.
      const lines = worker
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { runId?: string; requestId?: string; msg: string });
      const ofRun = lines.filter((line) => JSON.stringify(line).includes(run.id));
      expect(ofRun.map((line) => line.msg)).toContain('run completed');
      for (const line of ofRun) expect(line).toMatchObject({ runId: run.id, requestId: 'req-obs-1' });
      expect(lines.filter((line) => line.requestId === 'req-obs-1').every((l) => l.runId === run.id)).toBe(
        true,
      );
    } finally {
      await fake.close();
    }
  });

  it('refuses to start on a metrics port in use, naming it', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const worker = spawnNode(WORKER_MAIN, {
        ...testRedisEnv(),
        TETHER_METRICS_PORT: String(port),
        TETHER_SANDBOX: 'none',
        TETHER_QUEUE_PREFIX: '{obs-port-in-use}',
      });
      const { code } = await worker.exited;
      expect(code).toBe(1);
      expect(worker.output()).toContain(`TETHER_METRICS_PORT=${port}: the port is in use by another process`);
    } finally {
      taken.close();
    }
  });
});
