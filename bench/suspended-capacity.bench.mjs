// pnpm bench:capacity — 100,000 runs suspended on clarify at once: the worker's RSS
// against its idle RSS, and Redis memory per suspended run (its transcript, the
// checkpoint, excluded). One JSON line. Needs `pnpm build`; takes a few minutes.
import { createKeys } from '../packages/store/dist/redis/index.js';
import { RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, listedIn, rssBytes, tempDir, WORKER_NODE_OPTIONS } from './lib/stack.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 100_000);
const IN_FLIGHT = 200;

const redisServer = await benchRedis();
const workspaces = await tempDir('capacity');
const keys = createKeys('{bench-capacity}');
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
await redis.flushdb();
const store = new RunStore({ redis, keys });
const service = new RunService({ redis, keys, store });
const worker = await startStack({
  redis: redisServer.url,
  apis: 0,
  workers: ['bench-capacity'],
  // The flags it reports (it reported them without passing them to the worker before).
  workerNodeFlags: WORKER_NODE_OPTIONS.split(' ').filter(Boolean),
  env: {
    TETHER_QUEUE_PREFIX: keys.queuePrefix,
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_WORKER_CONCURRENCY: '64',
    TETHER_SANDBOX: 'none',
    LOG_LEVEL: 'warn',
  },
  listedWorkers: listedIn(redis, keys),
});
const workerPid = worker.workers[0].child.pid;

const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function usedMemory() {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

// V8 gives memory back only after it has been idle for a while (its memory reducer runs
// some 30 s after a burst): both readings are taken the same way, after SETTLE ms of
// idleness, sampled every 5 s (the samples are printed too).
const SETTLE = Number(process.env.BENCH_SETTLE_MS ?? 60_000);
const timelines = {};
async function settledRss(name) {
  const samples = [];
  for (let waited = 0; waited < SETTLE; waited += 5_000) {
    await settle(5_000);
    samples.push(await rssBytes(workerPid));
  }
  timelines[name] = samples.map((bytes) => Math.round(bytes / 2 ** 20));
  return samples.at(-1);
}
const idleRss = await settledRss('idle');
const memoryBefore = await usedMemory();

const body = {
  input: 'wait for me',
  model: {
    provider: 'replay',
    script: [{ toolCalls: [{ name: 'clarify', arguments: { question: 'Go on?' } }] }, { content: 'ok' }],
  },
  clarify: { timeoutMs: 24 * 3600 * 1000 },
};
const started = performance.now();
const ids = [];
let next = 0;
async function submitter() {
  while (next < RUNS) {
    next++;
    const { run } = await service.submit('bench', body);
    ids.push(run.id);
  }
}
await Promise.all(Array.from({ length: IN_FLIGHT }, submitter));
const submittedMs = performance.now() - started;

for (;;) {
  const counts = await service.jobCounts('delayed', 'waiting', 'active');
  if (counts.delayed >= RUNS) break;
  await settle(500);
}
const suspendedMs = performance.now() - started;
const suspendedRss = await settledRss('suspended');
const memoryAfter = await usedMemory();

// The transcript (checkpoint) is excluded: measure a sample of checkpoint keys and scale.
const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(ids.length / 500)) === 0);
let sampleBytes = 0;
for (const id of sample) sampleBytes += Number((await redis.memory('USAGE', keys.run(id).checkpoint)) ?? 0);
const checkpointBytes = (sampleBytes / sample.length) * RUNS;
const perRun = (memoryAfter - memoryBefore - checkpointBytes) / RUNS;
const statuses = new Set((await store.getMany(sample)).map((r) => r?.status));
// Where one suspended run's bytes are: each key of its own (MEMORY USAGE, with the key's own
// overhead), and its BullMQ job's hash.
const bytesByKey = {};
const oneRun = keys.run(ids[0]);
const named = Object.entries(oneRun).filter(
  ([, key]) => typeof key === 'string' && !key.includes(':events:'),
);
for (const [name, key] of [...named, ['job', `${keys.queuePrefix}:runs:${ids[0]}`]]) {
  const bytes = await redis.memory('USAGE', key, 'SAMPLES', 0);
  if (bytes !== null) bytesByKey[name] = bytes;
}

console.log(
  JSON.stringify({
    bench: 'suspended-capacity',
    runs: RUNS,
    worker_node_options: WORKER_NODE_OPTIONS,
    statuses: [...statuses],
    submit_s: Number((submittedMs / 1000).toFixed(1)),
    all_suspended_s: Number((suspendedMs / 1000).toFixed(1)),
    worker_idle_rss_mb: Number((idleRss / 2 ** 20).toFixed(1)),
    worker_rss_mb: Number((suspendedRss / 2 ** 20).toFixed(1)),
    worker_rss_growth_mb: Number(((suspendedRss - idleRss) / 2 ** 20).toFixed(1)),
    worker_rss_timeline_mb: timelines,
    redis_bytes_per_run_excluding_checkpoint: Math.round(perRun),
    checkpoint_bytes_per_run: Math.round(checkpointBytes / RUNS),
    redis_bytes_by_key: bytesByKey,
    target_rss_growth_mb: 20,
    target_bytes_per_run: 4096,
    pass: suspendedRss - idleRss <= 20 * 2 ** 20 && perRun <= 4096,
  }),
);

await worker.stop();
await service.close();
redis.disconnect();
await redisServer.stop();
await workspaces.remove();
