/**
 * Test helpers: `build()` makes the API app against the test Redis with a queue
 * prefix of its own (and a temporary workspace root), closed when the test
 * ends; fixtures put runs into the states the routes answer about.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CreateRunBody, ReplayScript, RunEvent } from '@tether/protocol';
import { newId } from '@tether/protocol';
import { formatViolations, settledInvariants } from '@tether/store/runs';
import { WebhookDispatcher } from '@tether/store/webhooks';
import { testRedisEnv, uniquePrefix } from '@tether/testing';
import type { FastifyInstance } from 'fastify';
import { expect, onTestFinished } from 'vitest';
import { createApp } from '../src/app.js';
import { type ApiConfig, loadApiConfig } from '../src/config.js';

export const ACME_KEY = 'sk_acme_0123456789';
export const BETA_KEY = 'sk_beta_0123456789';
/** Two tenants, `acme` and `beta`. */
export const API_KEYS = `acme:${ACME_KEY},beta:${BETA_KEY}`;
export const ACME = { authorization: `Bearer ${ACME_KEY}` } as const;
export const BETA = { authorization: `Bearer ${BETA_KEY}` } as const;

export interface BuildOptions {
  /** Extra environment (overrides the defaults below). */
  env?: Record<string, string>;
  /** `TETHER_API_KEYS`; default the two tenants above, '' for none. */
  keys?: string;
  /** Leave the app open when the test ends (the caller closes it). */
  keepOpen?: boolean;
  /**
   * Whether a test that passed ends with the invariant checker over what it left in Redis
   * (default true when the app uses the test Redis, not a `REDIS_URL` of the test's own, and is
   * not kept open). False only for a test that breaks a state on purpose, saying why.
   */
  checkAtEnd?: boolean;
}

export interface Built {
  app: FastifyInstance;
  config: Readonly<ApiConfig>;
}

/** Builds the app (ready, not listening) with replay allowed and logs off. */
export async function build(options: BuildOptions = {}): Promise<Built> {
  const workspaceRoot = await mkdtemp(join(tmpdir(), 'tether-api-ws-'));
  const config = loadApiConfig({
    // The test Redis (a cluster in the `cluster` project), unless the test points REDIS_URL elsewhere.
    ...(options.env?.REDIS_URL === undefined ? testRedisEnv() : {}),
    TETHER_QUEUE_PREFIX: uniquePrefix('api'),
    TETHER_WORKSPACE_ROOT: workspaceRoot,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_API_KEYS: options.keys ?? API_KEYS,
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const app = createApp(config);
  const close = async () => {
    await app.close();
    await rm(workspaceRoot, { recursive: true, force: true });
  };
  if (!options.keepOpen) {
    onTestFinished(async ({ task }) => {
      try {
        const checked = options.checkAtEnd ?? options.env?.REDIS_URL === undefined;
        if (checked && task.result?.state !== 'fail') await expectConsistent(app);
      } finally {
        await close();
      }
    });
  }
  await app.ready();
  return { app, config };
}

/**
 * What the test left in Redis is consistent: every live run has its job, slots and lines match
 * their runs, no waitpoint holds a resolved request (see `checkInvariants`).
 */
export async function expectConsistent(app: FastifyInstance): Promise<void> {
  const violations = await settledInvariants({ redis: app.redis, keys: app.keys });
  if (violations.length > 0) {
    throw new Error(`invariant violations in ${app.keys.queuePrefix}:\n${formatViolations(violations)}`);
  }
}

/**
 * Ends a run as its worker would: its terminal event (`finalize`, fenced by `token` when given),
 * then its job finished (here removed: no worker took it).
 */
export async function endRun(
  app: FastifyInstance,
  runId: string,
  end: Parameters<FastifyInstance['store']['finalize']>[1],
  token = '',
): Promise<void> {
  await app.store.finalize(runId, end, token);
  await (await app.runs.getJob(runId))?.remove();
}

/** A replay script body that answers `content` at once. */
export function replayRun(script: ReplayScript = [{ content: 'ok' }], extra: Partial<CreateRunBody> = {}) {
  return { input: 'do the thing', model: { provider: 'replay' as const, script }, ...extra };
}

/** Submits a run through the API as `headers`' tenant; returns its id. */
export async function submit(
  app: FastifyInstance,
  headers: Record<string, string> = ACME,
  body: object = replayRun(),
): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/v1/runs', headers, payload: body });
  if (response.statusCode !== 202)
    throw new Error(`submit answered ${response.statusCode}: ${response.body}`);
  return response.json<{ id: string }>().id;
}

/**
 * Moves a submitted run to `waiting_for_input` as a worker would: claims it
 * and suspends it on a question. Returns the clarify request id.
 */
export async function suspend(app: FastifyInstance, runId: string, expiresInMs = 60_000): Promise<string> {
  const token = 'test-worker:1';
  const claimed = await app.store.claim(runId, token, 1, 'test-worker');
  if (claimed.status !== 'ok') throw new Error(`claim answered ${claimed.status}`);
  const requestId = newId('clr');
  await app.store.suspend(runId, token, {
    requestId,
    question: 'Which one?',
    choices: ['a', 'b'],
    expiresAt: new Date(Date.now() + expiresInMs).toISOString(),
  });
  return requestId;
}

/**
 * After a refused request: the app still serves `headers`' tenant (200), and
 * answers with the tenant's runs so a test can check that nothing was added or lost.
 */
export async function expectServing(app: FastifyInstance, headers: Record<string, string> = ACME) {
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode).toBe(200);
  const listed = await app.inject({ method: 'GET', url: '/v1/runs?limit=100', headers });
  expect(listed.statusCode).toBe(200);
  return listed.json<{ data: { id: string }[] }>().data.map((run) => run.id);
}

/** The answer token of `runId`'s question, as its `clarify.requested` delivery carries it. */
export async function answerTokenOf(
  app: FastifyInstance,
  config: Readonly<ApiConfig>,
  tenant: string,
  runId: string,
) {
  const dispatcher = new WebhookDispatcher({
    store: app.store,
    webhooks: app.webhooks,
    secrets: config.secrets,
    publicUrl: config.publicUrl,
  });
  await dispatcher.dispatch(runId, tenant);
  const [endpoint] = await app.webhooks.list(tenant);
  const taken = await app.webhooks.take(tenant, endpoint?.id ?? '', 10, 60_000, false);
  const delivery = taken?.deliveries.find((d) => d.runId === runId);
  const token = config.secrets?.open(delivery?.token ?? '');
  if (!token) throw new Error(`no answer token was recorded for ${runId}`);
  return token;
}

/** Every event of `runId`, as tenant acme reads them through the JSON pages' first page. */
export async function runEvents(app: FastifyInstance, runId: string): Promise<RunEvent[]> {
  const page = await app.inject({
    method: 'GET',
    url: `/v1/runs/${runId}/events`,
    headers: { ...ACME, accept: 'application/json' },
  });
  return page.json<{ data: RunEvent[] }>().data;
}
