// Helpers for benchmarks that need Redis and Tether's processes (startStack, from @tether/testing).
// Needs `pnpm build`.
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from '../../packages/testing/dist/scripts.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
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

/** The resident set size of process `pid`, in bytes. */
export async function rssBytes(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
}

/**
 * Ready once the workers `ids` are listed in the workers hash (`keys.workers`), for a stack
 * without an API: a worker lists itself once it takes jobs.
 */
export function listedIn(redis, keys) {
  return async () => Object.keys(await redis.hgetall(keys.workers));
}

const CLOCK_TICK_US = 10_000;
/** The CPU time process `pid` has used so far, in µs (Linux /proc, clock ticks of 10 ms); NaN once it is gone. */
export function cpuMicros(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_US;
  } catch {
    return Number.NaN;
  }
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

/**
 * POSTs `body` as JSON to `url` through `agent` with `headers`; resolves with the parsed answer
 * once it has arrived if its status is `status`, else rejects with the answer's text.
 */
export function postJson(url, { agent, headers, body, status }) {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      agent,
      headers: { ...headers, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () =>
        res.statusCode === status
          ? resolve(JSON.parse(text))
          : reject(new Error(`POST ${url} answered ${res.statusCode}: ${text}`)),
      );
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
