/**
 * Real processes for the end-to-end tests: the built worker and API, started
 * by `@tether/testing` with this deployment's environment, and stopped by
 * `stopAll()` (SIGTERM, then SIGKILL after 3 s).
 */
import {
  type ApiProcess,
  startApiProcess,
  startWorkerProcess,
  type TestProcess,
} from '@tether/testing/scripts';

export type Spawned = TestProcess;

const running = new Set<TestProcess>();

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

/** Stops every process started here that is still running. */
export async function stopAll(): Promise<void> {
  const stopping = [...running];
  running.clear();
  await Promise.all(stopping.map((spawned) => spawned.stop()));
}
