import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReplayScript, RunEvent, RunEventType } from '@tether/protocol';
import { createKeys, createRedisConnection, type RedisClient, type TetherKeys } from '@tether/store/redis';
import {
  EventHub,
  formatViolations,
  RunService,
  RunStore,
  type StoredBody,
  settledInvariants,
} from '@tether/store/runs';
import {
  killAllSpawned,
  type TestProcess,
  testRedisEnv,
  testRedisTarget,
  uniquePrefix,
} from '@tether/testing';
import { startWorkerProcess, type WorkerEntry } from '@tether/testing/scripts';
import { afterAll, afterEach } from 'vitest';

/** One isolated Tether deployment for a test: its own queue prefix, workspace root, Redis connections. */
export interface Deployment {
  prefix: string;
  keys: TetherKeys;
  workspaceRoot: string;
  redis: RedisClient;
  store: RunStore;
  service: RunService;
  hub: EventHub;
  /**
   * Starts a worker process of this deployment and waits until it takes jobs; with `hooks`, one
   * whose attempts hold the windows they name open (the test entry, worker-with-hooks.mjs).
   */
  startWorker(env?: Record<string, string>, hooks?: TestHooks): Promise<TestProcess>;
  submit(script: ReplayScript, extra?: Partial<StoredBody>): Promise<string>;
  /** Resolves with the first event of `runId` that matches (already logged, or later). */
  waitForEvent(
    runId: string,
    match: RunEventType | ((event: RunEvent) => boolean),
    timeoutMs?: number,
  ): Promise<RunEvent>;
  /**
   * Waits until the invariant checker finds nothing in the deployment's Redis (a step in flight
   * shows for a moment), and throws with what it still finds after `settleMs` (default 5 s).
   * `tenantCap` defaults to the lowest `TETHER_TENANT_MAX_RUNNING` of the workers started.
   */
  expectConsistent(options?: { tenantCap?: number; settleMs?: number }): Promise<void>;
  close(): Promise<void>;
}

export const TENANT = 'tenant-a';

/** The windows a worker started by worker-with-hooks.mjs holds open (each logs `test hold: …`). */
export interface TestHooks {
  /** An attempt that asks the client for tool outputs stops for good, its checkpoint saved, before the requests. */
  holdBeforeToolRequest?: boolean;
  /** An attempt over its tenant's cap waits this long (ms), its run in line, before its job is delayed. */
  holdCappedMs?: number;
  /** A webhook attempt ends as timed out after this long (ms) instead of `WEBHOOK_DEFAULTS.timeoutMs`. */
  webhookTimeoutMs?: number;
}

/** The test-only worker entry: the built worker, with hooks from its arguments. */
const WORKER_WITH_HOOKS = fileURLToPath(new URL('./worker-with-hooks.mjs', import.meta.url));

/** The entry and arguments of a worker with `hooks`; the built entry without. */
function workerEntry(hooks: TestHooks | undefined): WorkerEntry {
  if (!hooks) return {};
  const args: string[] = [];
  if (hooks.holdBeforeToolRequest) args.push('--hold-before-tool-request');
  if (hooks.holdCappedMs) args.push('--hold-capped-ms', String(hooks.holdCappedMs));
  if (hooks.webhookTimeoutMs) args.push('--webhook-timeout-ms', String(hooks.webhookTimeoutMs));
  return { main: WORKER_WITH_HOOKS, args };
}

export interface DeploymentOptions {
  /** Queue shards (`TETHER_QUEUE_SHARDS`). Default 1. */
  shards?: number;
  /**
   * Whether `useDeployments` runs the invariant checker after a test that passed (default true).
   * False only for a test that leaves a broken state on purpose, saying why.
   */
  checkAtEnd?: boolean;
}

export async function createDeployment(name: string, options: DeploymentOptions = {}): Promise<Deployment> {
  // The test Redis: one server, or in the `cluster` project a Redis Cluster.
  const target = testRedisTarget();
  const prefix = uniquePrefix(name);
  const keys = createKeys(prefix, options.shards ?? 1);
  const workspaceRoot = await mkdtemp(join(tmpdir(), `tether-${name}-`));
  // Searchable by the unprivileged user a root worker's sandboxed commands run as.
  await chmod(workspaceRoot, 0o755);
  const connect = (name: string, subscriber = false) =>
    createRedisConnection({ ...target, name, mode: 'wait', subscriber, onError: () => {} });
  const redis = connect(`test-${name}`);
  const subscriber = connect(`test-${name}:sub`, true);
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store, backoffMs: 50 });
  const hub = new EventHub(subscriber, keys);
  const workers: TestProcess[] = [];
  /** The workers' `TETHER_TENANT_MAX_RUNNING`, for the checker's slot rule (the lowest one set). */
  let tenantCap: number | undefined;

  const deployment: Deployment = {
    prefix,
    keys,
    workspaceRoot,
    redis,
    store,
    service,
    hub,
    async startWorker(env = {}, hooks) {
      const cap = Number(env.TETHER_TENANT_MAX_RUNNING);
      if (cap > 0) tenantCap = Math.min(cap, tenantCap ?? cap);
      const worker = await startWorkerProcess({
        ...workerEntry(hooks),
        redisUrl: target.url,
        env: {
          ...testRedisEnv(),
          TETHER_QUEUE_PREFIX: prefix,
          TETHER_QUEUE_SHARDS: String(keys.shards),
          TETHER_WORKSPACE_ROOT: workspaceRoot,
          TETHER_ALLOW_REPLAY: '1',
          TETHER_SANDBOX: 'none',
          TETHER_WORKER_CONCURRENCY: '4',
          TETHER_LOCK_DURATION_MS: '2000',
          TETHER_STALLED_INTERVAL_MS: '1000',
          TETHER_SHUTDOWN_GRACE_MS: '5000',
          LOG_LEVEL: 'info',
          ...env,
        },
      });
      workers.push(worker);
      return worker;
    },
    async submit(script, extra = {}) {
      const { run } = await service.submit(TENANT, {
        input: 'test run',
        model: { provider: 'replay', script },
        ...extra,
      });
      return run.id;
    },
    async waitForEvent(runId, match, timeoutMs = 20_000) {
      const test = typeof match === 'string' ? (event: RunEvent) => event.type === match : match;
      let resolveFound: (event: RunEvent) => void = () => {};
      const found = new Promise<RunEvent>((resolve) => {
        resolveFound = resolve;
      });
      // Subscribe first, then read the backlog: nothing falls between the two.
      const unsubscribe = await hub.subscribe(runId, (event) => {
        if (test(event)) resolveFound(event);
      });
      try {
        const backlog = (await store.readEvents(runId)).find(test);
        if (backlog) return backlog;
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(async () => {
            // Each retry and failure with its error, to tell why a run did not get there.
            const log = (await store.readEvents(runId))
              .map((e) =>
                e.type === 'run.retrying' || e.type === 'run.failed'
                  ? `${e.type} ${JSON.stringify(e.data)}`
                  : e.type,
              )
              .join(', ');
            reject(new Error(`no matching event for ${runId} within ${timeoutMs} ms; log: ${log}`));
          }, timeoutMs);
        });
        try {
          return await Promise.race([found, timeout]);
        } finally {
          clearTimeout(timer);
        }
      } finally {
        await unsubscribe();
      }
    },
    async expectConsistent(options = {}) {
      const violations = await settledInvariants({ redis, keys, tenantCap, ...options });
      if (violations.length > 0) {
        throw new Error(`invariant violations in ${prefix}:\n${formatViolations(violations)}`);
      }
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.stop('SIGKILL')));
      await service.close();
      subscriber.disconnect();
      redis.disconnect();
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
  return deployment;
}

export const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

/**
 * Submits a crew parent (tenant `TENANT`) that delegates `tasks` at once (`delegate_parallel`), then
 * answers; its children play `children`'s scripts.
 */
export async function submitCrewParent(
  d: Deployment,
  tasks: readonly string[],
  children: { script: ReplayScript }[],
): Promise<string> {
  const { run } = await d.service.submit(TENANT, {
    input: 'lead the crew',
    toolsets: ['base', 'crew'],
    model: {
      provider: 'replay',
      script: [
        { toolCalls: [call('delegate_parallel', { tasks: tasks.map((goal) => ({ goal })) })] },
        { content: 'the crew reported' },
      ],
      children,
    },
  });
  return run.id;
}

/**
 * For a test file: returns `deploy(name)`, which creates a deployment that is
 * closed after the test, and kills every spawned process after the file.
 */
export function useDeployments(): (name: string, options?: DeploymentOptions) => Promise<Deployment> {
  let current: { deployment: Deployment; checkAtEnd: boolean } | undefined;
  afterEach(async (context) => {
    const ending = current;
    current = undefined;
    if (!ending) return;
    try {
      // Whatever a passing test left in Redis is consistent: every live run has its job, slots and
      // lines match their runs, no waitpoint holds a resolved request (see checkInvariants).
      if (ending.checkAtEnd && context.task.result?.state !== 'fail')
        await ending.deployment.expectConsistent();
    } finally {
      await ending.deployment.close();
    }
  });
  afterAll(killAllSpawned);
  return async (name, options) => {
    const deployment = await createDeployment(name, options);
    current = { deployment, checkAtEnd: options?.checkAtEnd ?? true };
    return deployment;
  };
}

/** Polls `check` every 25 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
