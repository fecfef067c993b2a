/**
 * Traces across processes: an API and a worker process send their spans over OTLP/HTTP (JSON) to a
 * receiver this test runs, and the spans of one run form one tree, from the API request down to
 * the tool calls.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAllSpawned, testRedisUrl, uniquePrefix } from '@tether/testing';
import { startApiProcess, startWorkerProcess } from '@tether/testing/scripts';
import { afterAll, describe, expect, it } from 'vitest';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  arrayValue?: { values: OtlpValue[] };
}
interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  service: string;
  attributes: Record<string, unknown>;
}

/** A minimal OTLP/HTTP receiver (JSON encoding): every span posted to /v1/traces, with its service. */
async function startReceiver(): Promise<{ url: string; spans: Span[]; server: Server }> {
  const spans: Span[] = [];
  const value = (v: OtlpValue): unknown =>
    v.stringValue ??
    (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.arrayValue?.values.map(value)));
  const attributes = (list: { key: string; value: OtlpValue }[] = []) =>
    Object.fromEntries(list.map(({ key, value: v }) => [key, value(v)]));
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const payload = JSON.parse(body) as {
          resourceSpans: {
            resource: { attributes: { key: string; value: OtlpValue }[] };
            scopeSpans: { spans: (Omit<Span, 'service' | 'attributes'> & { attributes: [] })[] }[];
          }[];
        };
        for (const resource of payload.resourceSpans) {
          const service = String(attributes(resource.resource.attributes)['service.name']);
          for (const scope of resource.scopeSpans) {
            for (const span of scope.spans)
              spans.push({ ...span, service, attributes: attributes(span.attributes) });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

afterAll(killAllSpawned);

describe('traces', () => {
  it("form one tree per run: request, enqueue, the job's processing, the attempt, its model turns and tool calls", async () => {
    const receiver = await startReceiver();
    const workspaces = await mkdtemp(join(tmpdir(), 'tether-tracing-'));
    const key = 'sk_trace_0123456789';
    const env = {
      TETHER_QUEUE_PREFIX: uniquePrefix('trace'),
      TETHER_WORKSPACE_ROOT: workspaces,
      TETHER_ALLOW_REPLAY: '1',
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    try {
      const redisUrl = testRedisUrl();
      const [api] = await Promise.all([
        startApiProcess({
          redisUrl,
          readyTimeoutMs: 60_000,
          env: { ...env, TETHER_API_KEYS: `acme:${key}` },
        }),
        startWorkerProcess({ redisUrl, readyTimeoutMs: 60_000, env: { ...env, TETHER_SANDBOX: 'none' } }),
      ]);
      // The caller's own trace: the request's span continues it.
      const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
      const callerSpan = '00f067aa0ba902b7';
      const submitted = await fetch(`${api.url}/v1/runs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          traceparent: `00-${callerTrace}-${callerSpan}-01`,
        },
        body: JSON.stringify({
          input: 'write a file',
          model: {
            provider: 'replay',
            script: [
              { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }] },
              { content: 'done' },
            ],
          },
        }),
      });
      expect(submitted.status).toBe(202);
      const runId = ((await submitted.json()) as { id: string }).id;

      const span = (name: string) => receiver.spans.find((s) => s.name === name && s.traceId === callerTrace);
      await expect
        // BullMQ's processing span ends last, with the job: it may come in a later batch.
        .poll(() => ['POST /v1/runs', 'execute_tool write_file', 'attempt', 'process runs'].every(span), {
          timeout: 20_000,
          interval: 100,
        })
        .toBe(true);
      await expect.poll(() => receiver.spans.filter((s) => s.name === 'chat replay').length).toBe(2);

      const request = span('POST /v1/runs') as Span;
      expect(request).toMatchObject({ service: 'tether-api', kind: 2, parentSpanId: callerSpan });
      expect(request.attributes).toMatchObject({
        'http.route': '/v1/runs',
        'http.response.status_code': 202,
      });
      const enqueue = span('enqueue run') as Span;
      expect(enqueue).toMatchObject({ service: 'tether-api', parentSpanId: request.spanId });
      expect(enqueue.attributes['tether.run.id']).toBe(runId);
      const processing = receiver.spans.find(
        (s) => s.name === 'process runs' && s.parentSpanId === enqueue.spanId,
      );
      expect(processing).toMatchObject({ service: 'tether-worker', traceId: callerTrace });
      const attempt = span('attempt') as Span;
      expect(attempt).toMatchObject({ service: 'tether-worker', parentSpanId: processing?.spanId });
      expect(attempt.attributes).toMatchObject({
        'tether.run.id': runId,
        'tether.attempt': 1,
        'tether.attempt.outcome': 'completed',
      });
      for (const chat of receiver.spans.filter((s) => s.name === 'chat replay')) {
        expect(chat).toMatchObject({ traceId: callerTrace, parentSpanId: attempt.spanId });
        expect(chat.attributes).toMatchObject({
          'gen_ai.request.model': 'replay',
          'tether.model.profile': 'replay',
        });
        expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
        expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      }
      const tool = span('execute_tool write_file') as Span;
      expect(tool).toMatchObject({ service: 'tether-worker', parentSpanId: attempt.spanId });
      expect(tool.attributes).toMatchObject({
        'gen_ai.tool.name': 'write_file',
        'tether.tool.outcome': 'ok',
      });

      // One tree: from the tool call, parent after parent, up to the request and the caller.
      const byId = new Map(receiver.spans.map((s) => [s.spanId, s]));
      const chain: string[] = [];
      for (
        let at: Span | undefined = tool;
        at;
        at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined
      ) {
        chain.push(at.name);
        if (at.parentSpanId === callerSpan) break;
      }
      expect(chain).toEqual([
        'execute_tool write_file',
        'attempt',
        'process runs',
        'enqueue run',
        'POST /v1/runs',
      ]);
    } finally {
      await killAllSpawned();
      receiver.server.close();
      await rm(workspaces, { recursive: true, force: true });
    }
  });
});
