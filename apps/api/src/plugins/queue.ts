import { SKILL_LIMITS } from '@tether/protocol';
import { ApprovalPolicyStore } from '@tether/store/approval-policies';
import { TenantBudgetStore, UsageLedger } from '@tether/store/budgets';
import { McpServerStore } from '@tether/store/mcp-servers';
import { createKeys, type TetherKeys } from '@tether/store/redis';
import { type EndedRun, EventHub, RunService, RunStore } from '@tether/store/runs';
import { ScheduleStore } from '@tether/store/schedules';
import { SessionService } from '@tether/store/sessions';
import { SkillStore } from '@tether/store/skills';
import { WebhookDispatcher, WebhookStore } from '@tether/store/webhooks';
import type { Telemetry } from 'bullmq';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { ApiConfig } from '../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    keys: TetherKeys;
    store: RunStore;
    /** Submit, read, answer, cancel: the run service of `@tether/store`. */
    runs: RunService;
    /** Create, read, list, delete sessions and send them messages. */
    sessions: SessionService;
    /** Live events of runs, through the one subscriber connection. */
    hub: EventHub;
    /** The tenants' skills. */
    skills: SkillStore;
    /** The MCP servers the tenants registered. */
    mcpServers: McpServerStore;
    /** The tenants' webhook endpoints and deliveries. */
    webhooks: WebhookStore;
    /** The tenants' default approval policies, which runs with none of their own take at submit. */
    approvalPolicies: ApprovalPolicyStore;
    /** The tenants' budgets (their own, else the operator's `TETHER_TENANT_BUDGETS`), checked at submit. */
    budgets: TenantBudgetStore;
    /** The tenants' usage ledger, which the workers add each model turn to. */
    usage: UsageLedger;
    /** The tenants' schedules and their BullMQ job schedulers (the workers fire them). */
    schedules: ScheduleStore;
  }
}

export interface QueuePluginOptions {
  config: Readonly<ApiConfig>;
  /** Traces: the queue's operations, and an `enqueue run` span per submission. */
  telemetry?: Telemetry | undefined;
  /** Told of each run this process ends (a cancel of a queued or waiting run), for the metrics. */
  onEnded?: ((run: EndedRun) => void) | undefined;
}

const queuePlugin: FastifyPluginAsync<QueuePluginOptions> = async (app, { config, telemetry, onEnded }) => {
  const keys = createKeys(config.queuePrefix, config.queueShards);
  const store = new RunStore({
    redis: app.redis,
    keys,
    eventMaxLength: config.eventMaxLength,
    retentionSeconds: config.retentionSeconds,
    sessionTtlSeconds: config.sessionTtlSeconds,
    onEnded,
  });
  const webhooks = new WebhookStore({
    redis: app.redis,
    queueConnection: app.queueRedis,
    keys,
    settings: config.webhook,
  });
  // The events the API appends (an answer, a cancel) go to the endpoints that want them.
  const dispatcher = new WebhookDispatcher({
    store,
    webhooks,
    secrets: config.secrets,
    publicUrl: config.publicUrl,
    subscriber: app.subscriber,
  });
  const approvalPolicies = new ApprovalPolicyStore({ redis: app.redis, keys, subscriber: app.subscriber });
  const budgets = new TenantBudgetStore({
    redis: app.redis,
    keys,
    defaults: config.tenantBudgets,
    subscriber: app.subscriber,
  });
  // Redis may be down at start: the subscriptions are made again when it is back.
  await dispatcher.listen().catch(() => {});
  await approvalPolicies.listen().catch(() => {});
  await budgets.listen().catch(() => {});
  const runs = new RunService({
    telemetry,
    redis: app.redis,
    queueConnection: app.queueRedis,
    keys,
    store,
    attempts: config.maxAttempts,
    backoffMs: config.backoffMs,
    webhooks: dispatcher,
    onWebhookError: (error, runId) =>
      app.log.warn(
        { err: error, runId },
        'webhook dispatch failed; the sweep or the run’s next claim does it',
      ),
  });
  // BullMQ reports connection trouble as 'error' events, at every reconnect attempt: the breaker logs the outage.
  runs.onQueueError((error) => app.log.debug({ error: error.message }, 'queue error'));
  app.decorate('keys', keys);
  app.decorate('store', store);
  app.decorate('runs', runs);
  app.decorate('sessions', new SessionService({ runs }));
  app.decorate('hub', new EventHub(app.subscriber, keys));
  app.decorate('webhooks', webhooks);
  app.decorate('approvalPolicies', approvalPolicies);
  app.decorate('budgets', budgets);
  app.decorate('usage', new UsageLedger({ redis: app.redis, keys }));
  const schedules = new ScheduleStore({
    redis: app.redis,
    queueConnection: app.queueRedis,
    keys,
    maxSchedules: config.schedule.maxSchedules,
  });
  app.decorate('schedules', schedules);
  app.decorate(
    'skills',
    new SkillStore({
      redis: app.redis,
      keys,
      limits: {
        maxCount: config.skillsMaxCount,
        maxBytes: config.skillsMaxBytes,
        maxFiles: SKILL_LIMITS.filesMax,
      },
    }),
  );
  app.decorate(
    'mcpServers',
    new McpServerStore({ redis: app.redis, keys, maxServers: config.mcpMaxServers }),
  );
  // Registered after the Redis plugin, so this runs before its connections close.
  app.addHook('onClose', async () => {
    dispatcher.close();
    approvalPolicies.close();
    budgets.close();
    await runs.close();
    await webhooks.close();
    await schedules.close();
  });
};

export default fp(queuePlugin, { name: 'tether-queue', fastify: '5.x', dependencies: ['tether-redis'] });
