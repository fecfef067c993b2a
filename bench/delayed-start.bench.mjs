// pnpm bench:delayed-start — how late a delayed run starts: from its `runAt` to its `run.started`
// (Redis's clock, the same host), through a real worker process on an idle stack. BENCH_RUNS runs
// (default 200), each scheduled BENCH_SPACING_MS (default 25) after the one before, so that each
// comes due alone, as delayed runs usually do. One JSON line: p50, p90, p99 and max of the lateness;
// goal p99 ≤ 250 ms. Every run must start at or after its runAt (a run early fails the bench). Needs
// `pnpm build`. REDIS_URL, or a redis-server on PATH.
import { createKeys } from '../packages/store/dist/redis/index.js';
import { RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, listedIn, percentile, tempDir } from './lib/stack.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const SPACING_MS = Number(process.env.BENCH_SPACING_MS ?? 25);
const LEAD_MS = 2_000;
const TARGET_P99_MS = 250;

const redisServer = await benchRedis();
const workspaces = await tempDir('delayed-start');
const keys = createKeys('{bench-delayed}');
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
await redis.flushdb();
const store = new RunStore({ redis, keys });
const service = new RunService({ redis, keys, store });
const worker = await startStack({
  redis: redisServer.url,
  apis: 0,
  workers: ['bench-delayed'],
  workerNodeFlags: [],
  env: {
    TETHER_QUEUE_PREFIX: keys.queuePrefix,
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_WORKER_CONCURRENCY: '8',
    TETHER_SANDBOX: 'none',
    LOG_LEVEL: 'warn',
  },
  listedWorkers: listedIn(redis, keys),
});

const body = { input: 'later', toolsets: [], model: { provider: 'replay', script: [{ content: 'ok' }] } };
const first = Date.now() + LEAD_MS;
const runs = [];
for (let i = 0; i < RUNS; i++) {
  const runAtMs = first + i * SPACING_MS;
  const { run } = await service.submit('bench', body, { runAtMs });
  runs.push({ id: run.id, runAtMs });
}

// Outside the timing: wait until every run has ended, then read when each started.
const deadline = Date.now() + LEAD_MS + RUNS * SPACING_MS + 60_000;
for (;;) {
  const records = await store.getMany(runs.map((run) => run.id));
  if (records.every((record) => record?.status === 'completed')) break;
  if (Date.now() > deadline)
    throw new Error('the delayed runs did not all complete within a minute of their time');
  await new Promise((resolve) => setTimeout(resolve, 200));
}
const lateness = [];
let early = 0;
for (const run of runs) {
  const started = (await store.readEvents(run.id)).find((event) => event.type === 'run.started');
  const late = Date.parse(started.at) - run.runAtMs;
  if (late < 0) early++;
  lateness.push(late);
}
const p99 = percentile(lateness, 99);
console.log(
  JSON.stringify({
    bench: 'delayed-start',
    runs: RUNS,
    spacing_ms: SPACING_MS,
    p50_ms: percentile(lateness, 50),
    p90_ms: percentile(lateness, 90),
    p99_ms: p99,
    max_ms: Math.max(...lateness),
    early,
    target_p99_ms: TARGET_P99_MS,
    pass: early === 0 && p99 <= TARGET_P99_MS,
  }),
);

await worker.stop();
await service.close();
redis.disconnect();
await redisServer.stop();
await workspaces.remove();
