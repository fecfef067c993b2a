import { BUDGET_LIMITS, type UsageReport, type UsageRow, type UsageTotals } from '@tether/protocol';
import type { RedisClient } from '../redis/connection.js';
import type { TetherKeys } from '../redis/keys.js';
import { type BudgetUse, type LedgerTotals, MICROS_PER_USD } from './budget-check.js';
import * as scripts from './commands/scripts.js';
import { daysBetween, periodOf, utcDay, utcMonth } from './periods.js';

/** One model turn's usage, as the ledger adds it to its tenant's. */
export interface TurnUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** What the turn cost, in micro-dollars (an integer; 0 for a profile without prices). */
  micros: number;
  /** The run's first turn: it counts one run. */
  firstTurn: boolean;
  /** The profile that answered the turn. */
  profile?: string | undefined;
  /** The model that answered the turn. */
  model?: string | undefined;
  /** The run's metadata pairs it is grouped by (its string values). */
  metadata?: readonly (readonly [string, string])[] | undefined;
}

/** How a report groups its rows: by day, model, profile, or the value of a metadata key. */
export type UsageGroupBy = 'day' | 'model' | 'profile' | `metadata.${string}`;

/** The fields of a day's hash, per total. */
const TOTALS = {
  in: 'inputTokens',
  out: 'outputTokens',
  tot: 'totalTokens',
  usd: 'costUsd',
  runs: 'runs',
} as const;
type TotalField = keyof typeof TOTALS;

/** How a dimension is marked in a day's field names (`p:<profile>:tot`). */
const DIMENSIONS = { profile: 'p', model: 'm', metadata: 'k' } as const;

export interface UsageLedgerOptions {
  redis: RedisClient;
  keys: TetherKeys;
  /** How long a day (and a month) stays after its last write, in days. Default `BUDGET_LIMITS.ledgerTtlDays`. */
  ttlDays?: number;
}

/**
 * The tenants' usage ledger: per tenant and UTC day, one hash of integer totals (tokens in, out and
 * in all, micro-dollars, runs), overall and per profile, model and metadata value; per UTC month,
 * one hash of the totals, which monthly budgets are checked against. Both under the tenant's hash
 * tag ({@link TetherKeys.tenantUsage}).
 *
 * Every turn is added by one script of HINCRBYs (`recordUsage`): workers recording turns of the
 * tenant's runs at once add up exactly, with no read-modify-write and no float drift (money is
 * counted in micro-dollars). Each hash expires `ttlDays` after its last write.
 */
export class UsageLedger {
  readonly #redis: RedisClient;
  readonly #keys: TetherKeys;
  readonly #ttlSeconds: number;

  constructor(options: UsageLedgerOptions) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    const ttlDays = options.ttlDays ?? BUDGET_LIMITS.ledgerTtlDays;
    if (!Number.isInteger(ttlDays) || ttlDays < 1) {
      throw new RangeError(`UsageLedger option "ttlDays" must be an integer of at least 1, got ${ttlDays}`);
    }
    this.#ttlSeconds = ttlDays * 86_400;
  }

  /** Adds a turn's usage to its tenant's day (`at`, epoch ms) and month; answers their totals after it. */
  async record(tenant: string, turn: TurnUsage, at = Date.now()): Promise<LedgerTotals> {
    const keys = this.#keys.tenantUsage(tenant);
    const reply = await scripts.recordUsage.run(this.#redis, {
      keys: { day: keys.day(utcDay(at)), month: keys.month(utcMonth(at)) },
      args: { ttlSeconds: this.#ttlSeconds, increments: increments(turn) },
    });
    return { day: { tokens: reply[0], micros: reply[1] }, month: { tokens: reply[2], micros: reply[3] } };
  }

  /** What the tenant used so far on `at`'s UTC day and month: one round trip. */
  async totals(tenant: string, at = Date.now()): Promise<LedgerTotals> {
    const keys = this.#keys.tenantUsage(tenant);
    const replies = await this.#redis
      .pipeline()
      .hmget(keys.day(utcDay(at)), 'tot', 'usd')
      .hmget(keys.month(utcMonth(at)), 'tot', 'usd')
      .exec();
    const pair = (index: number) => {
      const [error, values] = replies?.[index] ?? [new Error('no reply')];
      if (error) throw error;
      const [tokens, micros] = values as (string | null)[];
      return { tokens: Number(tokens ?? 0), micros: Number(micros ?? 0) };
    };
    return { day: pair(0), month: pair(1) };
  }

  /**
   * Marks the tenant warned of a budget in its period; true the first time only (SET NX), so a
   * warning goes out once per tenant, period and budget whatever the number of workers.
   */
  async markWarned(tenant: string, use: BudgetUse, at = Date.now()): Promise<boolean> {
    const key = this.#keys.tenantUsage(tenant).warned(periodOf(use.period, at), `${use.period}:${use.unit}`);
    // Kept a day past the period's end: a clock a little behind does not warn twice.
    const ttlMs = Math.max(1, use.resetsAt - at) + 86_400_000;
    return (await this.#redis.set(key, '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  /** The tenant's usage over the UTC days `from` to `to` (epoch ms of their midnights, inclusive), grouped. */
  async report(
    tenant: string,
    range: { from: number; to: number; groupBy: UsageGroupBy },
  ): Promise<UsageReport> {
    const days = daysBetween(range.from, range.to);
    const keys = this.#keys.tenantUsage(tenant);
    const pipeline = this.#redis.pipeline();
    for (const day of days) pipeline.hgetall(keys.day(day));
    const replies = (await pipeline.exec()) ?? [];
    const hashes = days.map((day, i) => {
      const [error, hash] = replies[i] ?? [new Error('no reply')];
      if (error) throw error;
      return { day, hash: hash as Record<string, string> };
    });
    const totals = emptyTotals();
    for (const { hash } of hashes) addFields(totals, hash, '');
    const rows =
      range.groupBy === 'day'
        ? hashes.map(({ day, hash }) => {
            const row: UsageRow = { key: day, ...emptyTotals() };
            addFields(row, hash, '');
            return row;
          })
        : groupRows(
            hashes.map(({ hash }) => hash),
            range.groupBy,
          );
    return {
      from: utcDay(range.from),
      to: utcDay(range.to),
      groupBy: range.groupBy,
      totals: finish(totals),
      rows: rows.map(finish),
    };
  }
}

/** The script's increments of a turn: the totals, then the same per profile, model and metadata value. */
function increments(turn: TurnUsage): (string | number)[] {
  const values: Record<TotalField, number> = {
    in: turn.inputTokens,
    out: turn.outputTokens,
    tot: turn.totalTokens,
    usd: turn.micros,
    runs: turn.firstTurn ? 1 : 0,
  };
  const prefixes = [
    '',
    ...(turn.profile === undefined ? [] : [`${DIMENSIONS.profile}:${turn.profile}:`]),
    ...(turn.model === undefined ? [] : [`${DIMENSIONS.model}:${turn.model}:`]),
    ...(turn.metadata ?? []).map(([key, value]) => `${DIMENSIONS.metadata}:${JSON.stringify([key, value])}:`),
  ];
  const list: (string | number)[] = [];
  for (const prefix of prefixes) {
    for (const [field, value] of Object.entries(values))
      if (value !== 0) list.push(`${prefix}${field}`, value);
  }
  return list;
}

function emptyTotals(): UsageTotals {
  return { inputTokens: 0, outputTokens: 0, totalTokens: 0, costUsd: 0, runs: 0 };
}

/** Adds a day hash's fields of one prefix (`''`: the totals) to `into` (money still in micro-dollars). */
function addFields(into: UsageTotals, hash: Record<string, string>, prefix: string): void {
  for (const [field, name] of Object.entries(TOTALS)) {
    const value = hash[`${prefix}${field}`];
    if (value !== undefined) into[name] += Number(value);
  }
}

/** Money from micro-dollars to dollars, once the sums are done (integers until then). */
function finish<T extends UsageTotals>(totals: T): T {
  return { ...totals, costUsd: totals.costUsd / MICROS_PER_USD };
}

/** The rows of a grouping other than by day: one per profile, model or metadata value, most tokens first. */
function groupRows(
  hashes: readonly Record<string, string>[],
  groupBy: Exclude<UsageGroupBy, 'day'>,
): UsageRow[] {
  const metadataKey = groupBy.startsWith('metadata.') ? groupBy.slice('metadata.'.length) : undefined;
  const dimension =
    metadataKey === undefined ? DIMENSIONS[groupBy as 'model' | 'profile'] : DIMENSIONS.metadata;
  const rows = new Map<string, UsageRow>();
  for (const hash of hashes) {
    for (const [field, value] of Object.entries(hash)) {
      const parsed = groupField(field);
      if (!parsed || parsed.dimension !== dimension) continue;
      let key = parsed.name;
      if (metadataKey !== undefined) {
        const pair = JSON.parse(parsed.name) as [string, string];
        if (pair[0] !== metadataKey) continue;
        key = pair[1];
      }
      const row = rows.get(key) ?? { key, ...emptyTotals() };
      rows.set(key, row);
      row[TOTALS[parsed.total]] += Number(value);
    }
  }
  return [...rows.values()].sort((a, b) => b.totalTokens - a.totalTokens || a.key.localeCompare(b.key));
}

/** A grouped field's parts (`p:<name>:tot`): the name may hold ':', the dimension and total do not. */
function groupField(field: string): { dimension: string; name: string; total: TotalField } | undefined {
  const first = field.indexOf(':');
  const last = field.lastIndexOf(':');
  if (first < 0 || last <= first) return undefined;
  const total = field.slice(last + 1);
  if (!(total in TOTALS)) return undefined;
  return { dimension: field.slice(0, first), name: field.slice(first + 1, last), total: total as TotalField };
}
