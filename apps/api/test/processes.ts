/**
 * Real processes for the end-to-end tests: the built worker and API, started
 * by `@tether/testing` with this deployment's environment, and stopped by
 * `stopAll()` (SIGTERM, then SIGKILL after 3 s).
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WebhookPayload } from '@tether/protocol';
import { createKeys, createRedisConnection } from '@tether/store/redis';
import { formatViolations, settledInvariants } from '@tether/store/runs';
import { testRedisEnv, testRedisTarget, uniquePrefix } from '@tether/testing';
import {
  type ApiProcess,
  startApiProcess,
  startWorkerProcess,
  type TestProcess,
} from '@tether/testing/scripts';
import type { TestContext } from 'vitest';
import { ACME } from './helper.js';

export type Spawned = TestProcess;

const running = new Set<TestProcess>();
const workspaceRoots = new Set<string>();
/**
 * The deployments the processes started since the last `stopAll` use, by queue prefix: their
 * queue shards and the lowest tenant cap of their workers, for the invariant checker.
 */
const used = new Map<string, { shards: number; tenantCap?: number }>();

function use(shared: Shared, env: Record<string, string>): void {
  // A test that runs a Redis of its own (to stop it, say) checks its own state.
  if (shared.redisUrl !== testRedisTarget().url) return;
  const entry = used.get(shared.prefix) ?? { shards: 1 };
  const shards = Number(env.TETHER_QUEUE_SHARDS);
  if (shards > 0) entry.shards = shards;
  const cap = Number(env.TETHER_TENANT_MAX_RUNNING);
  if (cap > 0) entry.tenantCap = Math.min(cap, entry.tenantCap ?? cap);
  used.set(shared.prefix, entry);
}

export interface Shared {
  redisUrl: string;
  /** Where Redis is for the processes, over `redisUrl`: `REDIS_CLUSTER_NODES` on the cluster project. */
  redisEnv?: Record<string, string>;
  prefix: string;
  workspaceRoot: string;
}

/** A worker process with the replay provider allowed and no sandbox (fast). */
export async function startWorker(
  shared: Shared,
  name = 'worker',
  concurrency = 4,
  env: Record<string, string> = {},
): Promise<Spawned> {
  use(shared, env);
  const worker = await startWorkerProcess({
    redisUrl: shared.redisUrl,
    id: name,
    killAfterMs: 3_000,
    env: {
      ...shared.redisEnv,
      TETHER_QUEUE_PREFIX: shared.prefix,
      TETHER_WORKSPACE_ROOT: shared.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_SANDBOX: 'none',
      TETHER_WORKER_CONCURRENCY: String(concurrency),
      LOG_LEVEL: 'info',
      ...env,
    },
  });
  running.add(worker);
  return worker;
}

/** An API process on a free loopback port; resolves with its base URL once it listens. */
export async function startApi(
  shared: Shared,
  keys: string,
  name = 'api',
  env: Record<string, string> = {},
): Promise<Spawned & ApiProcess & { base: string }> {
  use(shared, env);
  const api = await startApiProcess({
    redisUrl: shared.redisUrl,
    name,
    killAfterMs: 3_000,
    env: {
      ...shared.redisEnv,
      TETHER_QUEUE_PREFIX: shared.prefix,
      TETHER_WORKSPACE_ROOT: shared.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_API_KEYS: keys,
      TETHER_API_ID: name,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...env,
    },
  });
  running.add(api);
  return Object.assign(api, { base: api.url });
}

/**
 * A deployment's shared settings on the test Redis (a Redis Cluster in the `cluster` project), with a
 * queue prefix and a workspace root of its own; `stopAll()` removes the workspace root.
 */
export async function deployment(name: string): Promise<Shared> {
  const workspaceRoot = await mkdtemp(join(tmpdir(), `tether-${name}-`));
  // The sandbox's user (nobody, for a root worker) must reach the workspaces.
  await chmod(workspaceRoot, 0o755);
  workspaceRoots.add(workspaceRoot);
  return {
    redisUrl: testRedisTarget().url,
    redisEnv: testRedisEnv(),
    prefix: uniquePrefix(name),
    workspaceRoot,
  };
}

/** A JSON request to an API process: its status and parsed body. */
export async function call<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = ACME,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/**
 * Stops every process started here that is still running, and removes the deployments' workspaces.
 * Given the test's context (as `afterEach(stopAll)` does) of a test that passed, first checks what
 * it left in Redis with the invariant checker, while its processes still run; a test that breaks a
 * state on purpose calls `uncheckedEnd()`.
 */
export async function stopAll(context?: TestContext): Promise<void> {
  const deployments = [...used];
  used.clear();
  const passed = context !== undefined && context.task.result?.state !== 'fail';
  try {
    if (passed && !unchecked) await expectConsistent(deployments);
  } finally {
    unchecked = false;
    await stopProcesses();
  }
}

let unchecked = false;

/** The running test leaves a broken state on purpose (say why where it is called): not checked. */
export function uncheckedEnd(): void {
  unchecked = true;
}

async function expectConsistent(deployments: [string, { shards: number; tenantCap?: number }][]) {
  if (deployments.length === 0) return;
  const redis = createRedisConnection({
    ...testRedisTarget(),
    name: 'invariants',
    mode: 'wait',
    onError: () => {},
  });
  try {
    for (const [prefix, { shards, tenantCap }] of deployments) {
      const keys = createKeys(prefix, shards);
      const violations = await settledInvariants({ redis, keys, ...(tenantCap ? { tenantCap } : {}) });
      if (violations.length > 0) {
        throw new Error(`invariant violations in ${prefix}:\n${formatViolations(violations)}`);
      }
    }
  } finally {
    redis.disconnect();
  }
}

async function stopProcesses(): Promise<void> {
  const stopping = [...running];
  running.clear();
  await Promise.all(stopping.map((spawned) => spawned.stop()));
  const roots = [...workspaceRoots];
  workspaceRoots.clear();
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
}

/**
 * A webhook receiver on a free port that keeps every delivery's payload (answering 204); `close`
 * stops it.
 */
export async function webhookReceiver(): Promise<{
  url: string;
  received: WebhookPayload[];
  close: () => Promise<void>;
}> {
  const received: WebhookPayload[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      received.push(JSON.parse(body) as WebhookPayload);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Resolves once `check` holds of what `read` answers, asking every 100 ms (runs end in other processes). */
export async function eventually<T>(
  read: () => Promise<T>,
  check: (value: T) => boolean,
  timeoutMs = 45_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`not so after ${timeoutMs} ms: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
