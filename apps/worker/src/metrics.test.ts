import { describe, expect, it } from 'vitest';
import { WorkerMetrics } from './metrics.js';

describe('WorkerMetrics', () => {
  it('exposes tether_webhook_deliveries_total for the webhook deliveries to count into', async () => {
    const metrics = new WorkerMetrics({ tenantLabel: false });
    metrics.webhookDelivered('delivered');
    metrics.webhookDelivered('delivered');
    metrics.webhookDelivered('failed');
    const text = await metrics.registry.metrics();
    expect(text).toContain('# TYPE tether_webhook_deliveries_total counter');
    expect(text).toContain('tether_webhook_deliveries_total{outcome="delivered"} 2');
    expect(text).toContain('tether_webhook_deliveries_total{outcome="failed"} 1');
  });

  it('leaves the tenant out of every label unless asked, and puts it on every per-run metric when asked', async () => {
    const report = (metrics: WorkerMetrics) => {
      metrics.attemptEnded('completed', 'acme');
      metrics.toolCalled('bash', 'ok', 0.2, 'acme');
      metrics.modelRequested('default', 'ok', 'acme');
      metrics.modelAnswered(
        'default',
        { seconds: 1, firstTokenSeconds: 0.3, inputTokens: 5, outputTokens: 2, costUsd: 0.25 },
        'acme',
      );
      metrics.clarifyWaited(12, 'acme');
      metrics.webhookDelivered('delivered', 'acme');
      return metrics.registry.metrics();
    };
    const plain = await report(new WorkerMetrics({ tenantLabel: false }));
    expect(plain).not.toContain('acme');
    expect(plain).toContain('tether_tokens_total{profile="default",kind="input"} 5');
    const labelled = await report(new WorkerMetrics({ tenantLabel: true }));
    for (const line of [
      'tether_attempts_total{outcome="completed",tenant="acme"} 1',
      'tether_tool_calls_total{tool="bash",outcome="ok",tenant="acme"} 1',
      'tether_model_requests_total{profile="default",outcome="ok",tenant="acme"} 1',
      'tether_model_latency_seconds_count{profile="default",tenant="acme"} 1',
      'tether_model_time_to_first_token_seconds_count{profile="default",tenant="acme"} 1',
      'tether_tokens_total{profile="default",kind="output",tenant="acme"} 2',
      'tether_cost_usd_total{profile="default",tenant="acme"} 0.25',
      'tether_clarify_wait_seconds_count{tenant="acme"} 1',
      'tether_webhook_deliveries_total{outcome="delivered",tenant="acme"} 1',
    ]) {
      expect(labelled).toContain(line);
    }
  });
});
