// Helpers for benchmarks that need Redis and worker processes. Needs `pnpm build`.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../../packages/testing/dist/redis.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const WORKER_MAIN = join(ROOT, 'apps/worker/dist/main.js');
/**
 * The Node flags the worker is shipped with (pnpm start, the Dockerfile, docker compose): a small
 * young generation keeps the RSS of a long-lived worker near its idle size after bursts.
 * BENCH_WORKER_NODE_OPTIONS overrides them ('' for none).
 */
export const WORKER_NODE_OPTIONS = process.env.BENCH_WORKER_NODE_OPTIONS ?? '--max-semi-space-size=2';

/** A Redis for the benchmark: REDIS_URL, or a private redis-server on a free port. */
export async function benchRedis() {
  return startRedis({ url: process.env.REDIS_URL });
}

export async function tempDir(name) {
  const dir = await mkdtemp(join(tmpdir(), `tether-bench-${name}-`));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Starts a worker process and resolves once it is ready. */
export async function startWorkerProcess(env) {
  const child = spawn(process.execPath, [WORKER_MAIN], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: 'warn',
      TETHER_SANDBOX: 'none',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const onData = (chunk) => {
    output += chunk.toString();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  // LOG_LEVEL=warn hides the ready line: wait for the BullMQ worker's Redis client instead.
  await new Promise((resolve) => setTimeout(resolve, 800));
  if (child.exitCode !== null) throw new Error(`worker exited: ${output}`);
  return {
    child,
    output: () => output,
    async rssBytes() {
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return kb * 1024;
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}
