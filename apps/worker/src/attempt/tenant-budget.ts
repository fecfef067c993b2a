import type { RunEventInput, TetherError, Usage } from '@tether/protocol';
import {
  type BudgetUse,
  budgetsToWarn,
  budgetUses,
  MICROS_PER_USD,
  percentUsed,
  periodOf,
  tenantBudgetExceeded,
  type UsageLedger,
  usedUpBudget,
} from '@tether/store/budgets';
import { indexedMetadata } from '@tether/store/runs';
import type { EventSink } from '../event-sink.js';
import type { AttemptContext, WorkerBudgets } from './context.js';
import type { Prepared } from './prepare.js';

/** The profile name a replay script's turns are recorded under (`checkpoint.model.profile`). */
const REPLAY_PROFILE = 'replay';

/**
 * One attempt's part in its tenant's ledger and budgets.
 *
 * - Each model turn's usage is added to the ledger as the attempt emits it (`usage` carries the
 *   run's running total: the turn is what it adds to the total seen before), money in whole
 *   micro-dollars rounded from the totals, so a run's turns add up to its rounded `usage.costUsd`.
 * - A turn that brings the tenant to 80% of a budget, the first in the period across every worker
 *   (the ledger's SET NX), appends `budget.warning` to this run's log.
 * - Before each model turn (the attempt's `beforeTurn`, once every call of the last turn has its
 *   result), the turns recorded so far are awaited and the tenant's budgets are checked against one
 *   read of the ledger: used up, the attempt fails with `ERR_TENANT_BUDGET_EXCEEDED`.
 *
 * A turn whose recording fails is logged and lost to the ledger (never to the run); a check that
 * cannot read the ledger lets the turn go.
 */
export class TenantBudgetGuard {
  readonly #ctx: AttemptContext;
  readonly #prepared: Prepared;
  readonly #sink: EventSink;
  readonly #parts: WorkerBudgets;
  readonly #metadata: [string, string][];
  /** The run's usage as last recorded (at the attempt's start, its checkpoint's). */
  #last: Usage;
  /** The turns being recorded, in order. */
  #recording: Promise<void> = Promise.resolve();
  /** The budgets this attempt already looked at warning of (`<period id>:<period>:<unit>`). */
  readonly #warned = new Set<string>();

  constructor(ctx: AttemptContext, prepared: Prepared, sink: EventSink, parts: WorkerBudgets) {
    this.#ctx = ctx;
    this.#prepared = prepared;
    this.#sink = sink;
    this.#parts = parts;
    this.#metadata = indexedMetadata(prepared.spec.metadata);
    this.#last = { ...prepared.checkpoint.usage };
  }

  /** Told every event the attempt emits: a `usage` event's turn goes to the ledger. */
  readonly observe = (event: RunEventInput): void => {
    if (event.type !== 'usage') return;
    const total = event.data;
    const before = this.#last;
    this.#last = { ...total };
    const { checkpoint } = this.#prepared;
    // A replay script's turns cost nothing and are billed by no one (its usage is an estimate):
    // they are not the tenant's spending, and not worth a Redis write each.
    if (checkpoint.model?.profile === REPLAY_PROFILE) return;
    const turn = {
      inputTokens: total.inputTokens - before.inputTokens,
      outputTokens: total.outputTokens - before.outputTokens,
      totalTokens: total.totalTokens - before.totalTokens,
      micros: micros(total.costUsd) - micros(before.costUsd),
      firstTurn: checkpoint.step === 1,
      profile: checkpoint.model?.profile,
      model: checkpoint.model?.name,
      metadata: this.#metadata,
    };
    const at = Date.now();
    this.#recording = this.#recording.then(() =>
      this.#record(turn, at).catch((error: unknown) =>
        this.#ctx.log.warn({ err: error, turn }, "could not add a turn's usage to the tenant's ledger"),
      ),
    );
  };

  /** The attempt's `beforeTurn`: the tenant's budget it has used up, as the error that fails the run. */
  readonly beforeTurn = async (): Promise<TetherError | undefined> => {
    await this.#recording;
    const { budgets, ledger, metrics } = this.#parts;
    const tenant = this.#prepared.tenant;
    let used: BudgetUse | undefined;
    try {
      used = await usedUpBudget(budgets, ledger, tenant);
    } catch (error) {
      this.#ctx.log.warn({ err: error }, "could not check the tenant's budgets; the turn goes on");
      return undefined;
    }
    if (!used) return undefined;
    metrics?.tenantBudgetStopped(used.period, used.unit, tenant);
    return tenantBudgetExceeded(used);
  };

  /** Resolves once every turn told so far is recorded (and its warnings emitted). */
  settled(): Promise<void> {
    return this.#recording;
  }

  async #record(turn: Parameters<UsageLedger['record']>[1], at: number): Promise<void> {
    const { budgets, ledger } = this.#parts;
    const tenant = this.#prepared.tenant;
    const totals = await ledger.record(tenant, turn, at);
    const inForce = await budgets.get(tenant);
    if (inForce) await this.#warn(budgetUses(inForce.budgets, totals, at), at);
  }

  /** `budget.warning` on this run for each budget at 80% or more that no worker warned of yet. */
  async #warn(uses: BudgetUse[], at: number): Promise<void> {
    const tenant = this.#prepared.tenant;
    for (const use of budgetsToWarn(uses)) {
      const key = `${periodOf(use.period, at)}:${use.period}:${use.unit}`;
      if (this.#warned.has(key)) continue;
      this.#warned.add(key);
      if (!(await this.#parts.ledger.markWarned(tenant, use, at))) continue;
      this.#sink.emit({
        type: 'budget.warning',
        data: {
          period: use.period,
          unit: use.unit,
          limit: use.limit,
          used: use.used,
          percent: percentUsed(use),
          resetsAt: new Date(use.resetsAt).toISOString(),
        },
      });
      this.#parts.metrics?.budgetWarned(use.period, use.unit, tenant);
    }
  }
}

/** US dollars as whole micro-dollars (0 when there are none). */
function micros(usd: number | undefined): number {
  return Math.round((usd ?? 0) * MICROS_PER_USD);
}
