import { type ElectedQueueCounts, queueJobsGauge, RunEndMetrics } from '@tether/telemetry';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { EFFECTIVE_SANDBOXES, type EffectiveSandbox } from './sandbox-report.js';

/** Seconds, from a fast tool call or model turn to a slow one (5 ms to 10 min). */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Seconds a question may wait for its answer (1 s to 7 days). */
const WAIT_SECONDS = [1, 5, 10, 20, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600, 7 * 24 * 3600];

/** The labels a metric of a run gets: its own, and `tenant` when the deployment asked for it. */
type Labels = Record<string, string>;

/**
 * The worker's Prometheus metrics (`TETHER_METRICS_PORT`), in a registry of
 * its own. Labels stay bounded: statuses and outcomes from fixed sets, tool
 * names of the built-in tools, model profiles of the server's configuration,
 * never a run id; `tenant` only with `TETHER_METRICS_TENANT_LABEL=1`.
 */
export class WorkerMetrics {
  readonly registry = new Registry();
  /** `tether_runs_finished_total`, `tether_run_duration_seconds`: fed by the worker's `RunStore` (`onEnded`). */
  readonly runEnd: RunEndMetrics;
  readonly #tenantLabel: boolean;
  readonly #attempts: Counter<string>;
  readonly #toolCalls: Counter<string>;
  readonly #toolSeconds: Histogram<string>;
  readonly #modelRequests: Counter<string>;
  readonly #modelSeconds: Histogram<string>;
  readonly #firstTokenSeconds: Histogram<string>;
  readonly #tokens: Counter<string>;
  readonly #cost: Counter<string>;
  readonly #budgetStops: Counter<string>;
  readonly #budgetWarnings: Counter<string>;
  readonly #clarifyWait: Histogram<string>;
  readonly #webhookDeliveries: Counter<string>;
  readonly #scheduleFirings: Counter<string>;
  readonly #sandboxMode: Gauge<string>;
  readonly #fallbacks: Counter<string>;

  constructor(options: {
    tenantLabel: boolean;
    queueCounts?: ElectedQueueCounts | undefined;
    /** The profiles whose breaker `tether_model_breaker_open` shows, and the breaker. */
    breaker?: { profiles: readonly string[]; isOpen: (profile: string) => boolean } | undefined;
  }) {
    const registers = [this.registry];
    this.#tenantLabel = options.tenantLabel;
    const labels = (...names: string[]) => (options.tenantLabel ? [...names, 'tenant'] : names);
    collectDefaultMetrics({ register: this.registry });
    this.runEnd = new RunEndMetrics(this.registry, { tenantLabel: options.tenantLabel });
    this.#attempts = new Counter({
      name: 'tether_attempts_total',
      help: "Attempts (jobs taken) by how they ended: completed, failed, retried, cancelled, suspended, tool_calls, delegating, released, … (the settlement's kind).",
      labelNames: labels('outcome'),
      registers,
    });
    this.#toolCalls = new Counter({
      name: 'tether_tool_calls_total',
      help: 'Built-in tool calls by tool and outcome: ok, error, cancelled.',
      labelNames: labels('tool', 'outcome'),
      registers,
    });
    this.#toolSeconds = new Histogram({
      name: 'tether_tool_duration_seconds',
      help: 'Built-in tool calls: how long each took.',
      labelNames: labels('tool'),
      buckets: SECONDS,
      registers,
    });
    this.#modelRequests = new Counter({
      name: 'tether_model_requests_total',
      help: 'Requests to the model by profile and outcome: ok, or the error (rate_limited, timeout, unavailable, connection, bad_response, bad_request, auth, aborted, error); a retried try counts once with its error.',
      labelNames: labels('profile', 'outcome'),
      registers,
    });
    this.#modelSeconds = new Histogram({
      name: 'tether_model_latency_seconds',
      help: 'Model turns that answered: time from the request to the whole answer (retries included).',
      labelNames: labels('profile'),
      buckets: SECONDS,
      registers,
    });
    this.#firstTokenSeconds = new Histogram({
      name: 'tether_model_time_to_first_token_seconds',
      help: "Model turns that answered: time from the answering try's request to the first token streamed back.",
      labelNames: labels('profile'),
      buckets: SECONDS,
      registers,
    });
    this.#tokens = new Counter({
      name: 'tether_tokens_total',
      help: 'Tokens the model reported, by profile and kind: input, output.',
      labelNames: labels('profile', 'kind'),
      registers,
    });
    this.#cost = new Counter({
      name: 'tether_cost_usd_total',
      help: "What the model's tokens cost in US dollars, by profile (profiles with `prices` only).",
      labelNames: labels('profile'),
      registers,
    });
    this.#clarifyWait = new Histogram({
      name: 'tether_clarify_wait_seconds',
      help: 'Questions (clarify) a run resumed from: time from the question to its answer or timeout.',
      labelNames: labels(),
      buckets: WAIT_SECONDS,
      registers,
    });
    this.#budgetStops = new Counter({
      name: 'tether_tenant_budget_stops_total',
      help: "Runs stopped at a turn boundary because their tenant used up a budget (ERR_TENANT_BUDGET_EXCEEDED), by the budget's period and unit.",
      labelNames: labels('period', 'unit'),
      registers,
    });
    this.#budgetWarnings = new Counter({
      name: 'tether_budget_warnings_total',
      help: "budget.warning events: a tenant's use reached 80% of a budget, once per period, by the budget's period and unit.",
      labelNames: labels('period', 'unit'),
      registers,
    });
    this.#webhookDeliveries = new Counter({
      name: 'tether_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome.',
      labelNames: labels('outcome'),
      registers,
    });
    this.#scheduleFirings = new Counter({
      name: 'tether_schedule_firings_total',
      help: "Schedules' ticks and triggers a worker took, by outcome: fired, duplicate (a tick taken again whose run was made), skipped_overlap, skipped_missed, paused, gone, failed.",
      labelNames: labels('outcome'),
      registers,
    });
    this.#sandboxMode = new Gauge({
      name: 'tether_sandbox_mode',
      help: "1 for the sandbox this worker's bash commands run under (bwrap, none, or unavailable: bwrap asked for and broken, bash refused), 0 for the others; none of them until the start's check is done.",
      labelNames: ['mode'],
      registers,
    });
    this.#fallbacks = new Counter({
      name: 'tether_model_fallbacks_total',
      help: 'Model turns moved from a profile to the next of its `fallbacks` (a failure its retries did not fix, or its breaker open), by profile.',
      labelNames: labels('from', 'to'),
      registers,
    });
    const breaker = options.breaker;
    if (breaker) {
      new Gauge({
        name: 'tether_model_breaker_open',
        help: "1 while a model profile's breaker is open (it failed over to its fallbacks in the last TETHER_MODEL_BREAKER_MS and is skipped), else 0.",
        labelNames: ['profile'],
        registers,
        collect() {
          for (const profile of breaker.profiles) this.set({ profile }, breaker.isOpen(profile) ? 1 : 0);
        },
      });
    }
    if (options.queueCounts) queueJobsGauge(this.registry, options.queueCounts);
  }

  /** A model turn went from profile `from` to `to` (see `model.fallback`). */
  modelFellBack(from: string, to: string, tenant?: string | undefined): void {
    this.#fallbacks.inc(this.#with({ from, to }, tenant));
  }

  /** The start's sandbox check found `mode` (see the sandbox report's `effective`). */
  sandboxMode(mode: EffectiveSandbox): void {
    for (const each of EFFECTIVE_SANDBOXES) this.#sandboxMode.set({ mode: each }, each === mode ? 1 : 0);
  }

  #with(labels: Labels, tenant: string | undefined): Labels {
    return this.#tenantLabel ? { ...labels, tenant: tenant ?? '' } : labels;
  }

  /** An attempt ended as `outcome` (a settlement's kind, or `retried`). */
  attemptEnded(outcome: string, tenant?: string | undefined): void {
    this.#attempts.inc(this.#with({ outcome }, tenant));
  }

  /** A run of `tenant` was stopped: it used up its `period` budget of `unit`. */
  tenantBudgetStopped(period: string, unit: string, tenant?: string | undefined): void {
    this.#budgetStops.inc(this.#with({ period, unit }, tenant));
  }

  /** `tenant` was warned at 80% of its `period` budget of `unit`. */
  budgetWarned(period: string, unit: string, tenant?: string | undefined): void {
    this.#budgetWarnings.inc(this.#with({ period, unit }, tenant));
  }

  /** A built-in tool call ended. */
  toolCalled(tool: string, outcome: 'ok' | 'error' | 'cancelled', seconds: number, tenant?: string): void {
    this.#toolCalls.inc(this.#with({ tool, outcome }, tenant));
    this.#toolSeconds.observe(this.#with({ tool }, tenant), seconds);
  }

  /** One request to the model ended (`ok`, or a failed try's error). */
  modelRequested(profile: string, outcome: string, tenant?: string | undefined): void {
    this.#modelRequests.inc(this.#with({ profile, outcome }, tenant));
  }

  /** A model turn answered: its latency, time to first token and tokens. */
  modelAnswered(
    profile: string,
    answer: {
      seconds: number;
      firstTokenSeconds?: number | undefined;
      inputTokens: number;
      outputTokens: number;
      /** What the turn cost, when the profile has prices. */
      costUsd?: number | undefined;
    },
    tenant?: string | undefined,
  ): void {
    const labels = this.#with({ profile }, tenant);
    this.#modelSeconds.observe(labels, answer.seconds);
    if (answer.firstTokenSeconds !== undefined)
      this.#firstTokenSeconds.observe(labels, answer.firstTokenSeconds);
    if (answer.inputTokens > 0)
      this.#tokens.inc(this.#with({ profile, kind: 'input' }, tenant), answer.inputTokens);
    if (answer.outputTokens > 0)
      this.#tokens.inc(this.#with({ profile, kind: 'output' }, tenant), answer.outputTokens);
    if (answer.costUsd !== undefined && answer.costUsd > 0) this.#cost.inc(labels, answer.costUsd);
  }

  /** A run resumed from a question asked `seconds` ago (answered or timed out). */
  clarifyWaited(seconds: number, tenant?: string | undefined): void {
    this.#clarifyWait.observe(this.#with({}, tenant), seconds);
  }

  /**
   * A webhook delivery attempt ended as `outcome` (`delivered`, `failed`,
   * `retrying`, …: a small fixed set of the webhook code's): for the webhook
   * deliveries, which run in the worker process.
   */
  webhookDelivered(outcome: string, tenant?: string | undefined): void {
    this.#webhookDeliveries.inc(this.#with({ outcome }, tenant));
  }

  /** A schedule's firing ended (`schedules/fire.ts`'s outcomes, a small fixed set). */
  scheduleFired(outcome: string, tenant?: string | undefined): void {
    this.#scheduleFirings.inc(this.#with({ outcome }, tenant));
  }
}
