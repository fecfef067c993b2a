/**
 * The OpenTelemetry SDK, started by the API and the workers only when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set: nothing of it is loaded otherwise
 * (the apps import this module dynamically). The SDK reads its own
 * environment (`OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`,
 * `OTEL_BSP_*`, …). No automatic instrumentation: the spans are Tether's own
 * and BullMQ's, through BullMQ's telemetry interface (`bullmq-otel`), which
 * is what the apps are handed and use for their own spans too.
 */
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';

export interface Tracing {
  /** BullMQ's telemetry interface over the SDK: for the queues and workers, and for Tether's own spans. */
  telemetry: Telemetry;
  /** Sends the spans not yet sent and stops the SDK. */
  shutdown(): Promise<void>;
}

/** Starts the SDK for a process named `serviceName` (unless `OTEL_SERVICE_NAME` names it). */
export function startTracing(options: { serviceName: string }): Tracing {
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME || options.serviceName,
    instrumentations: [],
  });
  sdk.start();
  const otel = new BullMQOtel({ tracerName: 'tether' });
  // BullMQ's background loops (the stalled-jobs check) start from the root context, not from the
  // span that happened to be active: without it a long-lived worker grows one endless trace.
  Object.assign(otel.contextManager, { root: () => ROOT_CONTEXT });
  return { telemetry: otel, shutdown: () => sdk.shutdown() };
}
