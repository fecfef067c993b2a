import { SKILL_LIMITS } from '@tether/protocol';
import { TenantBudgetStore, UsageLedger } from '@tether/store/budgets';
import { McpServerStore } from '@tether/store/mcp-servers';
import { MemoryStore } from '@tether/store/memory';
import type { TetherKeys } from '@tether/store/redis';
import { RunService, RunStore } from '@tether/store/runs';
import { ScheduleStore } from '@tether/store/schedules';
import { SessionService } from '@tether/store/sessions';
import { SkillStore } from '@tether/store/skills';
import { WebhookDispatcher, WebhookStore } from '@tether/store/webhooks';
import type { Telemetry } from 'bullmq';
import type { Logger } from 'pino';
import type { WorkerBudgets } from '../attempt/context.js';
import { McpListings } from '../attempt/mcp-listings.js';
import type { WorkerConfig } from '../config.js';
import type { WorkerMetrics } from '../metrics.js';
import { SkillFolders, SkillIndexes } from '../skills.js';
import { DueSignals } from '../webhooks/due-signals.js';
import type { WorkerConnections } from './connections.js';

/** The stores the worker's attempts and pumps use, on its connections. */
export interface WorkerStores {
  store: RunStore;
  /**
   * To find and promote the job of a session's next run and of a crew parent whose last child has
   * reported, and to queue, time out and cancel crew children.
   */
  runs: RunService;
  memory: MemoryStore;
  /** The tenants' budgets (a copy per tenant, dropped when one changes) and usage ledger. */
  budgets: WorkerBudgets;
  mcpServers: McpServerStore;
  mcpListings: McpListings;
  skills: { store: SkillStore; indexes: SkillIndexes; folders: SkillFolders };
  /** Webhooks: the events attempts append become deliveries, which this worker's pumps send. */
  webhookStore: WebhookStore;
  dispatcher: WebhookDispatcher;
  dueSignals: DueSignals;
  /** The tenants' schedules, whose ticks this worker fires; sessions, for a schedule's messages. */
  schedules: ScheduleStore;
  sessions: SessionService;
  close(): Promise<void>;
}

export function openStores(options: {
  config: Readonly<WorkerConfig>;
  keys: TetherKeys;
  connections: WorkerConnections;
  metrics: WorkerMetrics | undefined;
  telemetry: Telemetry | undefined;
  logger: Logger;
}): WorkerStores {
  const { config, keys, metrics, telemetry, logger } = options;
  const { redis, subscriber } = options.connections;
  const store = new RunStore({
    redis,
    keys,
    eventMaxLength: config.eventMaxLength,
    retentionSeconds: config.retentionSeconds,
    sessionTtlSeconds: config.sessionTtlSeconds,
    onEnded: metrics?.runEnd.ended,
  });
  const skillStore = new SkillStore({
    redis,
    keys,
    limits: {
      maxCount: config.skillsMaxCount,
      maxBytes: config.skillsMaxBytes,
      maxFiles: SKILL_LIMITS.filesMax,
    },
  });
  const skillFolders = new SkillFolders({
    store: skillStore,
    base: config.skillsCacheDir,
    logger,
    // A superseded folder stays as long as an attempt that mounted it may still run.
    retainMs: Math.max(2 * 3600_000, config.wallClockMs),
  });
  const webhookStore = new WebhookStore({ redis, keys, settings: config.webhook });
  const budgets = new TenantBudgetStore({ redis, keys, defaults: config.tenantBudgets, subscriber });
  // Redis may be down at start: the subscription is made again when it is back.
  budgets.listen().catch(() => {});
  const dueSignals = new DueSignals();
  const dispatcher = new WebhookDispatcher({
    store,
    webhooks: webhookStore,
    secrets: config.secrets,
    publicUrl: config.publicUrl,
    subscriber,
    onDue: (tenant, endpointId) => dueSignals.notify(tenant, endpointId),
  });
  // The engine's steps outside an attempt (a child timed out, children cancelled, a run given up on)
  // record their webhook deliveries as they append the events; one that fails is left to the sweep.
  const runs = new RunService({
    redis,
    keys,
    store,
    telemetry,
    webhooks: dispatcher,
    onWebhookError: (err, runId) =>
      logger.warn({ err, runId }, 'could not record the webhook deliveries; the sweep will'),
  });
  const schedules = new ScheduleStore({ redis, keys, maxSchedules: config.schedule.maxSchedules });
  return {
    store,
    runs,
    schedules,
    sessions: new SessionService({ runs }),
    memory: new MemoryStore({
      redis,
      keys,
      maxEntries: config.memoryMaxEntries,
      maxBytes: config.memoryMaxBytes,
    }),
    budgets: { budgets, ledger: new UsageLedger({ redis, keys }), metrics },
    mcpServers: new McpServerStore({ redis, keys, maxServers: config.mcpMaxServers }),
    mcpListings: new McpListings(config.mcpListTtlMs),
    skills: { store: skillStore, indexes: new SkillIndexes(skillStore), folders: skillFolders },
    webhookStore,
    dispatcher,
    dueSignals,
    async close() {
      dispatcher.close();
      budgets.close();
      await webhookStore.close().catch(() => undefined);
      await schedules.close().catch(() => undefined);
      await runs.close().catch(() => undefined);
      await skillFolders.close().catch(() => undefined);
    },
  };
}
