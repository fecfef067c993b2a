import {
  isAgentError,
  type ModelFallbackEvent,
  type ModelProvider,
  type ModelRetryEvent,
  turnCost,
} from '@tether/agent';
import { idTime } from '@tether/protocol';
import { type Span, SpanKind, type Telemetry } from 'bullmq';
import type { WorkerMetrics } from '../metrics.js';

/** What the worker reports to, when anything: its metrics (`TETHER_METRICS_PORT`), its traces (OTLP). */
export interface Observability {
  metrics?: WorkerMetrics | undefined;
  telemetry?: Telemetry | undefined;
}

/**
 * What one attempt reports for the metrics and the traces. Its `attempt`
 * span is a child of the context active when it is made (BullMQ's
 * processing of the job, which continues the trace of the request that
 * submitted the run); each model turn (`chat <model>`) and each tool call
 * (`execute_tool <name>`) is a span under it, as in OpenTelemetry's
 * conventions for generative AI. Made only when the worker has metrics or
 * traces: without either, an attempt pays nothing.
 */
export class AttemptObserver {
  /** The run's tenant, once the claim has read it (for the `tenant` label). */
  tenant: string | undefined;
  readonly #metrics: WorkerMetrics | undefined;
  readonly #telemetry: Telemetry | undefined;
  readonly #span: Span | undefined;
  readonly #context: unknown;
  #outcome: string | undefined;

  constructor(
    observability: Observability,
    attempt: { runId: string; attempt: number; workerId: string; requestId?: string | undefined },
  ) {
    this.#metrics = observability.metrics;
    this.#telemetry = observability.telemetry;
    if (this.#telemetry) {
      const { tracer, contextManager } = this.#telemetry;
      const active = contextManager.active();
      this.#span = tracer.startSpan('attempt', { kind: SpanKind.INTERNAL }, active);
      this.#span.setAttributes({
        'tether.run.id': attempt.runId,
        'tether.attempt': attempt.attempt,
        'tether.worker.id': attempt.workerId,
        ...(attempt.requestId ? { 'tether.request.id': attempt.requestId } : {}),
      });
      this.#context = this.#span.setSpanOnContext(active);
    }
  }

  /** `provider`, reporting each of its turns: requests and their outcomes, latency, first token, tokens. */
  observe(provider: ModelProvider): ModelProvider {
    const profile = provider.name;
    const model = provider.model ?? provider.name;
    return {
      name: provider.name,
      model: provider.model,
      prices: provider.prices,
      contextWindow: provider.contextWindow,
      compactAt: provider.compactAt,
      complete: async (request) => {
        const started = performance.now();
        const span = this.#child(`chat ${model}`, SpanKind.CLIENT, {
          'gen_ai.operation.name': 'chat',
          'gen_ai.request.model': model,
          'tether.model.profile': profile,
        });
        const onRetry = (event: ModelRetryEvent) => {
          this.#metrics?.modelRequested(profile, modelOutcome(event.error), this.tenant);
          span?.addEvent('retry', { 'tether.try': event.attempt, 'error.type': event.error.code });
          request.onRetry?.(event);
        };
        const onFallback = (event: ModelFallbackEvent) => {
          this.#metrics?.modelFellBack(event.from, event.to, this.tenant);
          span?.addEvent('fallback', { 'tether.fallback.to': event.to });
          request.onFallback?.(event);
        };
        try {
          const response = await provider.complete({ ...request, onRetry, onFallback });
          const { inputTokens, outputTokens } = response.usage;
          this.#metrics?.modelRequested(profile, 'ok', this.tenant);
          this.#metrics?.modelAnswered(
            profile,
            {
              seconds: (performance.now() - started) / 1000,
              firstTokenSeconds:
                response.firstTokenMs === undefined ? undefined : response.firstTokenMs / 1000,
              inputTokens,
              outputTokens,
              costUsd: provider.prices ? turnCost(response.usage, provider.prices) : undefined,
            },
            this.tenant,
          );
          span?.setAttributes({
            'gen_ai.usage.input_tokens': inputTokens,
            'gen_ai.usage.output_tokens': outputTokens,
            'gen_ai.response.finish_reasons': [response.finishReason],
            ...(response.firstTokenMs === undefined
              ? {}
              : { 'tether.model.first_token_ms': Math.round(response.firstTokenMs) }),
          });
          return response;
        } catch (error) {
          const outcome = modelOutcome(error);
          this.#metrics?.modelRequested(profile, outcome, this.tenant);
          span?.setAttribute('error.type', outcome);
          span?.recordException(error instanceof Error ? error : String(error));
          throw error;
        } finally {
          span?.end();
        }
      },
    };
  }

  /**
   * For `runAttempt`'s `onToolCall`: each tool call's span, count and duration. An MCP server's
   * tool is counted as `mcp` (its names are the servers', without bound); its span names it.
   */
  readonly onToolCall = (name: string, server?: string | undefined) => {
    const started = performance.now();
    const span = this.#child(`execute_tool ${name}`, SpanKind.INTERNAL, {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': name,
      ...(server === undefined ? {} : { 'tether.mcp.server': server }),
    });
    const label = server === undefined ? name : 'mcp';
    return (result: { ok: boolean; code?: string | undefined }) => {
      const outcome = result.ok ? 'ok' : result.code === 'ERR_TOOL_CANCELLED' ? 'cancelled' : 'error';
      this.#metrics?.toolCalled(label, outcome, (performance.now() - started) / 1000, this.tenant);
      span?.setAttributes({
        'tether.tool.outcome': outcome,
        ...(result.code ? { 'error.type': result.code } : {}),
      });
      span?.end();
    };
  };

  /** The run resumes from question `requestId` (answered or timed out): how long it waited. */
  clarifyResumed(requestId: string): void {
    const askedAt = idTime(requestId);
    if (askedAt !== undefined)
      this.#metrics?.clarifyWaited(Math.max(0, Date.now() - askedAt) / 1000, this.tenant);
  }

  /** How the attempt ended (a settlement's kind, or `retried`): counted once. */
  settled(outcome: string): void {
    if (this.#outcome !== undefined) return;
    this.#outcome = outcome;
    this.#metrics?.attemptEnded(outcome, this.tenant);
    this.#span?.setAttribute('tether.attempt.outcome', outcome);
  }

  /** Ends the attempt's span (`error`: the attempt threw something that was not BullMQ's control flow). */
  end(error?: unknown): void {
    if (error !== undefined) this.#span?.recordException(error instanceof Error ? error : String(error));
    if (this.tenant) this.#span?.setAttribute('tether.tenant', this.tenant);
    this.#span?.end();
  }

  #child(name: string, kind: SpanKind, attributes: Record<string, string | number>): Span | undefined {
    if (!this.#telemetry) return undefined;
    const span = this.#telemetry.tracer.startSpan(name, { kind }, this.#context);
    span.setAttributes(attributes);
    return span;
  }
}

/** A failed model request's outcome label: its `ERR_MODEL_<X>` code as `x` (a fixed set), else `error`. */
export function modelOutcome(error: unknown): string {
  const kind = isAgentError(error) ? MODEL_ERROR.exec(error.code)?.[1] : undefined;
  return kind ? kind.toLowerCase() : 'error';
}

/** A model error's code, and what follows its prefix. */
const MODEL_ERROR = /^ERR_MODEL_([A-Z_]+)$/;
