/**
 * The one way Tether's processes are started outside production: `pnpm start`,
 * the tests and the benches. `startStack()` finds or starts Redis, starts N
 * API processes and N worker processes (the built `dist/` entry points), and
 * resolves once the stack takes work: every API answers `/readyz` and the
 * first lists every worker (a worker lists itself only once it takes jobs).
 * `startApiProcess()` and `startWorkerProcess()` start one of each, awaited by
 * its log line, for tests that add or remove processes as they go.
 *
 * Loads neither vitest nor testcontainers, so plain scripts use it through
 * `@tether/testing/scripts`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type SpawnOptions, spawnNode, type TestProcess } from './processes.js';
import {
  freePort,
  type RedisServerOptions,
  type StartedRedis,
  startRedisServer,
  waitForPing,
} from './redis.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The built API entry point. */
export const API_MAIN = `${ROOT}apps/api/dist/server.js`;
/** The built worker entry point. */
export const WORKER_MAIN = `${ROOT}apps/worker/dist/main.js`;
/**
 * The Node flags the worker ships with (`pnpm start`, the Dockerfile, docker
 * compose): a small young generation keeps a long-lived worker's RSS near its
 * idle size after bursts.
 */
export const WORKER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];

/** An environment to add; a variable set to `undefined` is left out. */
export type Env = Record<string, string | undefined>;

/** What every process of a stack shares. */
export interface ProcessOptions extends Omit<SpawnOptions, 'name' | 'onLine'> {
  redisUrl: string;
  /** Its environment, over `REDIS_URL` (and `PORT` or `TETHER_WORKER_ID`). */
  env?: Env;
  /** Called with each line it prints. */
  onLine?: (name: string, line: string) => void;
  /** How long to wait for its ready line (ms). Default 45,000. */
  readyTimeoutMs?: number;
}

/** An API process and its base URL. */
export interface ApiProcess extends TestProcess {
  url: string;
  port: number;
}

function start(
  name: string,
  script: string,
  env: Env,
  options: Omit<ProcessOptions, 'redisUrl' | 'env'>,
  args: readonly string[] = [],
): TestProcess {
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`pnpm build\` first`);
  const { onLine, readyTimeoutMs: _, ...spawn } = options;
  return spawnNode(script, env, args, {
    ...spawn,
    name,
    onLine: onLine && ((line) => onLine(name, line)),
  });
}

/** Starts an API process on `port` (default: a free loopback port) without waiting for it. */
async function spawnApi(name: string, options: ProcessOptions & { port?: number }): Promise<ApiProcess> {
  const port = options.port ?? (await freePort());
  const { redisUrl, env, port: _, ...rest } = options;
  const spawned = start(name, API_MAIN, { REDIS_URL: redisUrl, PORT: String(port), ...env }, rest);
  return Object.assign(spawned, { url: `http://127.0.0.1:${port}`, port });
}

/** Which script a worker process runs, and its arguments. */
export interface WorkerEntry {
  /**
   * The entry script (default {@link WORKER_MAIN}): a test's own, which starts the built worker
   * with what the test needs of it (hooks into its timing), in place of the production entry.
   */
  main?: string;
  /** Its arguments. */
  args?: readonly string[];
}

/** Starts a worker process without waiting for it; without an id, the worker makes its own. */
function spawnWorker(id: string | undefined, options: ProcessOptions & WorkerEntry): TestProcess {
  const { redisUrl, env, main = WORKER_MAIN, args, ...rest } = options;
  return start(id ?? 'worker', main, { REDIS_URL: redisUrl, TETHER_WORKER_ID: id, ...env }, rest, args);
}

/**
 * Starts one API process and resolves once it listens (its `Server listening
 * at` line: the log level must be `info` or lower).
 */
export async function startApiProcess(
  options: ProcessOptions & { name?: string; port?: number },
): Promise<ApiProcess> {
  const api = await spawnApi(options.name ?? 'api', options);
  await ready(api, /"msg":"Server listening at/, options.readyTimeoutMs);
  return api;
}

/**
 * Starts one worker process (`TETHER_WORKER_ID` = `id`, if given; the built
 * entry, or `main` with `args`) and resolves once it takes jobs (its `worker
 * ready` line: the log level must be `info` or lower).
 */
export async function startWorkerProcess(
  options: ProcessOptions & WorkerEntry & { id?: string },
): Promise<TestProcess> {
  const worker = spawnWorker(options.id, options);
  await ready(worker, /"msg":"worker ready"/, options.readyTimeoutMs);
  return worker;
}

// 45 s: an API or worker imports more at start than it did (OpenTelemetry's API, undici, the
// console's static files), and on a 2-core machine at a load average of 20 a whole stack took over
// 30 s to be ready under vitest. Under the hooks' 60 s, so that this error is the one reported.
async function ready(spawned: TestProcess, line: RegExp, timeoutMs = 45_000): Promise<void> {
  try {
    await spawned.waitFor(line, timeoutMs);
  } catch (error) {
    await spawned.stop('SIGKILL');
    throw error;
  }
}

/** What {@link startStack} starts. */
export interface StackOptions {
  /**
   * Redis: the URL of one that runs (it must answer PING), or how to start a
   * `redis-server` of the stack's own from PATH (default: a temporary one).
   */
  redis?: string | RedisServerOptions;
  /** API processes (default 1), named `api`, or `api-1`, `api-2`… when there are several. */
  apis?: number;
  /** Worker processes (default 1), as a count (ids `worker-1`, `worker-2`…) or their ids. */
  workers?: number | readonly string[];
  /** The first API's port (default: a free one; every other API gets a free one). */
  port?: number;
  /** The environment of every process, over `REDIS_URL`, `PORT` and `TETHER_WORKER_ID`. */
  env?: Env;
  /** The APIs' own, over `env`. */
  apiEnv?: Env;
  /** The workers' own, over `env`; a function gives each worker its own (a port of its own). */
  workerEnv?: Env | ((id: string, index: number) => Env);
  /** The APIs' Node flags (default none). */
  apiNodeFlags?: readonly string[];
  /** The workers' Node flags (default {@link WORKER_NODE_FLAGS}). */
  workerNodeFlags?: readonly string[];
  /** Start every process from this process's whole environment, not PATH and HOME alone. */
  inheritEnv?: boolean;
  /** Every process in a process group of its own (a Ctrl-C at the terminal reaches only the parent). */
  detached?: boolean;
  /** The APIs' and workers' working directory. */
  cwd?: string;
  /** Aborting it while the stack starts stops what was started, and `startStack` rejects. */
  signal?: AbortSignal;
  /** Called with each line a process prints, Redis's included (name `redis`) when the stack starts it. */
  onLine?: (name: string, line: string) => void;
  /** How much of each process's output `output()` keeps (default: all). */
  maxOutputChars?: number;
  /**
   * For a stack without an API: the ids of the workers listed as taking jobs
   * (the workers hash, read through `@tether/store`'s keys). Without it, such a
   * stack waits for each worker's `worker ready` line instead.
   */
  listedWorkers?: () => Promise<readonly string[]>;
  /** How long the stack may take to be ready (ms). Default 45,000. */
  readyTimeoutMs?: number;
  /** On `stop()`: how long a process gets after SIGTERM before SIGKILL (ms). Default 3,000. */
  stopTimeoutMs?: number;
}

/** A running stack. */
export interface Stack {
  redisUrl: string;
  /** The stack's own `redis-server`, when it started one. */
  redis: StartedRedis | undefined;
  /** The APIs' base URLs (`http://127.0.0.1:<port>`), in order. */
  urls: string[];
  apis: ApiProcess[];
  workers: TestProcess[];
  /** Every API and worker process. */
  processes: TestProcess[];
  /** Stops the APIs and workers (SIGTERM: they drain), then the stack's own Redis. */
  stop(): Promise<void>;
}

/**
 * Starts a stack and resolves once it is ready: every API answers `/readyz`
 * with 200 and the first lists every worker (or, without an API, every worker
 * is listed or has said it is ready). If it does not get there within
 * `readyTimeoutMs`, or a process exits first, everything it started is stopped
 * and the error names the process and ends with its output.
 */
export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const stopTimeoutMs = options.stopTimeoutMs ?? 3_000;
  const timeoutMs = options.readyTimeoutMs ?? 45_000;
  let redis: StartedRedis | undefined;
  let redisUrl: string;
  if (typeof options.redis === 'string') {
    redisUrl = options.redis;
    await waitForPing(redisUrl, 5_000);
  } else {
    const onLine = options.onLine;
    redis = await startRedisServer({
      stopTimeoutMs,
      detached: options.detached,
      ...options.redis,
      onLine: options.redis?.onLine ?? (onLine && ((line) => onLine('redis', line))),
    });
    redisUrl = redis.url;
  }
  const shared: ProcessOptions = {
    redisUrl,
    inheritEnv: options.inheritEnv,
    detached: options.detached,
    cwd: options.cwd,
    onLine: options.onLine,
    maxOutputChars: options.maxOutputChars,
    killAfterMs: stopTimeoutMs,
  };
  const apiCount = options.apis ?? 1;
  const workerIds =
    typeof options.workers === 'object'
      ? [...options.workers]
      : Array.from({ length: options.workers ?? 1 }, (_, i) => `worker-${i + 1}`);
  const apis: ApiProcess[] = [];
  const workers: TestProcess[] = [];
  const stack: Stack = {
    redisUrl,
    redis,
    urls: [],
    apis,
    workers,
    processes: [],
    async stop() {
      await Promise.all([...apis, ...workers].map((spawned) => spawned.stop('SIGTERM', stopTimeoutMs)));
      await redis?.stop();
    },
  };
  try {
    options.signal?.throwIfAborted();
    for (let i = 0; i < apiCount; i++) {
      const name = apiCount === 1 ? 'api' : `api-${i + 1}`;
      const port = i === 0 ? options.port : undefined;
      apis.push(
        await spawnApi(name, {
          ...shared,
          port,
          nodeFlags: options.apiNodeFlags,
          env: { ...options.env, ...options.apiEnv },
        }),
      );
    }
    for (const [index, id] of workerIds.entries()) {
      const own = typeof options.workerEnv === 'function' ? options.workerEnv(id, index) : options.workerEnv;
      workers.push(
        spawnWorker(id, {
          ...shared,
          nodeFlags: options.workerNodeFlags ?? WORKER_NODE_FLAGS,
          env: { ...options.env, ...own },
        }),
      );
    }
    stack.urls.push(...apis.map((api) => api.url));
    stack.processes.push(...apis, ...workers);
    const started = new AbortController();
    await Promise.race([
      whenReady(apis, workers, workerIds, options.listedWorkers, timeoutMs, started.signal),
      aborted(options.signal),
      ...stack.processes.map((spawned) =>
        spawned.exited.then(({ code, signal }) => {
          throw new Error(
            `${spawned.name} exited (code ${code}, signal ${signal}) before the stack was ready; output:\n${spawned.output().slice(-4_000)}`,
          );
        }),
      ),
    ]).finally(() => started.abort());
    return stack;
  } catch (error) {
    await Promise.all([...apis, ...workers].map((spawned) => spawned.stop('SIGKILL')));
    await redis?.stop();
    throw error;
  }
}

/** Rejects when `signal` aborts; never settles without one. */
function aborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal?.aborted) reject(signal.reason);
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** Resolves once the stack takes work; rejects after `timeoutMs`. */
async function whenReady(
  apis: readonly ApiProcess[],
  workers: readonly TestProcess[],
  ids: readonly string[],
  listedWorkers: (() => Promise<readonly string[]>) | undefined,
  timeoutMs: number,
  settled: AbortSignal,
): Promise<void> {
  const first = apis[0];
  if (first === undefined && listedWorkers === undefined) {
    await Promise.all(workers.map((worker) => worker.waitFor(/"msg":"worker ready"/, timeoutMs)));
    return;
  }
  const deadline = Date.now() + timeoutMs;
  let missing: readonly string[] = ids;
  let answering = 0;
  while (Date.now() < deadline && !settled.aborted) {
    const statuses = await Promise.all(apis.map((api) => readyz(api.url)));
    answering = statuses.filter((status) => status !== undefined).length;
    const listed = first === undefined ? await listedWorkers?.() : statuses[0]?.workers.map((w) => w.id);
    if (answering === apis.length && listed !== undefined) {
      missing = ids.filter((id) => !listed.includes(id));
      if (missing.length === 0) return;
    }
    // Polled: each API logs the requests it answers, so not too often.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `the stack was not ready within ${timeoutMs / 1000} s: ${answering} of ${apis.length} APIs ready, workers not listed: ${missing.join(', ') || 'none'}`,
  );
}

/** The `/readyz` body of an API that answers 200, else undefined. */
async function readyz(url: string): Promise<{ workers: { id: string }[] } | undefined> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { workers?: { id: string }[] };
    return { workers: body.workers ?? [] };
  } catch {
    return undefined;
  }
}
