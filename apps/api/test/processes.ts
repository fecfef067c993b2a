/**
 * Real processes for the end-to-end tests: the built worker
 * (`apps/worker/dist/main.js`) and API (`apps/api/dist/server.js`), started
 * with their environment, awaited by their "ready" log lines, and stopped by
 * `stopAll()` (SIGTERM, then SIGKILL).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '@tether/testing';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const WORKER_MAIN = `${ROOT}apps/worker/dist/main.js`;
export const API_MAIN = `${ROOT}apps/api/dist/server.js`;

export interface Spawned {
  name: string;
  child: ChildProcess;
  /** Everything it printed so far (for failure messages). */
  output(): string;
  /** Resolves once its output matches `pattern` (already, or later); rejects after `timeoutMs` or at its exit. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const running = new Set<Spawned>();

function start(name: string, script: string, env: Record<string, string>, ready: RegExp): Promise<Spawned> {
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`pnpm build\` first`);
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const watchers = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const watcher of watchers) watcher();
  });
  const spawned: Spawned = {
    name,
    child,
    output: () => output,
    waitFor: (pattern, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (pattern.test(output)) done(resolve);
          else if (child.exitCode !== null || child.signalCode !== null) {
            done(() => reject(new Error(`${name} exited before printing ${pattern}:\n${output}`)));
          }
        };
        const timer = setTimeout(
          () =>
            done(() => reject(new Error(`${name} printed no ${pattern} within ${timeoutMs} ms:\n${output}`))),
          timeoutMs,
        );
        const done = (settle: () => void) => {
          clearTimeout(timer);
          watchers.delete(check);
          settle();
        };
        watchers.add(check);
        check();
      }),
    async stop() {
      running.delete(spawned);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(spawned);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`${name} was not ready within 15 s`)), 15_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(new Error(`${error.message}\n--- ${name} output ---\n${output}`));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      for (const watcher of watchers) watcher();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve(spawned);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      for (const watcher of watchers) watcher();
    });
    child.once('exit', (code, signal) => fail(new Error(`${name} exited (code ${code}, signal ${signal})`)));
  });
}

export interface Shared {
  redisUrl: string;
  prefix: string;
  workspaceRoot: string;
}

/** A worker process with the replay provider allowed and no sandbox (fast). */
export function startWorker(
  shared: Shared,
  name = 'worker',
  concurrency = 4,
  env: Record<string, string> = {},
): Promise<Spawned> {
  return start(
    name,
    WORKER_MAIN,
    {
      REDIS_URL: shared.redisUrl,
      TETHER_QUEUE_PREFIX: shared.prefix,
      TETHER_WORKSPACE_ROOT: shared.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_SANDBOX: 'none',
      TETHER_WORKER_CONCURRENCY: String(concurrency),
      TETHER_WORKER_ID: name,
      LOG_LEVEL: 'info',
      ...env,
    },
    /"msg":"worker ready"/,
  );
}

/** An API process on a free loopback port; resolves with its base URL once it listens. */
export async function startApi(
  shared: Shared,
  keys: string,
  name = 'api',
): Promise<Spawned & { base: string }> {
  const port = await freePort();
  const spawned = await start(
    name,
    API_MAIN,
    {
      REDIS_URL: shared.redisUrl,
      TETHER_QUEUE_PREFIX: shared.prefix,
      TETHER_WORKSPACE_ROOT: shared.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_API_KEYS: keys,
      TETHER_API_ID: name,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'info',
    },
    /"msg":"Server listening at/,
  );
  return Object.assign(spawned, { base: `http://127.0.0.1:${port}` });
}

/** Stops every process started here that is still running. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((spawned) => spawned.stop()));
}
