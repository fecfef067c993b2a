// pnpm bench:clarify — the clarify round trip: from the answer call returning to the
// resumed attempt's next event (`attempt.started`), through a real worker process.
// One JSON line: p50/p99 over many suspensions. Needs `pnpm build`.
import { createKeys, EventHub, RunService, RunStore } from '../packages/queue/dist/index.js';
import { Redis } from '../packages/queue/node_modules/ioredis/built/index.js';
import { startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, listedIn, percentile, tempDir } from './lib/stack.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
const WARMUP = 20;

const redisServer = await benchRedis();
const workspaces = await tempDir('clarify');
const keys = createKeys('{bench-clarify}');
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
const subscriber = new Redis(redisServer.url, { maxRetriesPerRequest: null });
await redis.flushdb();
const store = new RunStore({ redis, keys });
const service = new RunService({ redis, keys, store });
const hub = new EventHub(subscriber, keys);
const worker = await startStack({
  redis: redisServer.url,
  apis: 0,
  workers: ['bench-clarify'],
  workerNodeFlags: [],
  env: {
    TETHER_QUEUE_PREFIX: keys.queuePrefix,
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_WORKER_CONCURRENCY: '4',
    TETHER_SANDBOX: 'none',
    LOG_LEVEL: 'warn',
  },
  listedWorkers: listedIn(redis, keys),
});

// One run that asks ROUNDS + WARMUP questions in a row.
const turns = WARMUP + ROUNDS;
const script = [
  ...Array.from({ length: turns }, (_, i) => ({
    toolCalls: [{ name: 'clarify', arguments: { question: `q${i}` } }],
  })),
  { content: 'done' },
];
const { run } = await service.submit('bench', {
  input: 'round trips',
  model: { provider: 'replay', script },
  clarify: { timeoutMs: 600_000 },
  limits: { maxSteps: turns + 1 },
});

const waiters = [];
const unsubscribe = await hub.subscribe(run.id, (event) => {
  const now = performance.now();
  for (const waiter of [...waiters]) {
    if (waiter.type === event.type) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve({ event, at: now });
    }
  }
});
const next = (type) => new Promise((resolve) => waiters.push({ type, resolve }));

const samples = [];
let requested = next('clarify.requested');
for (let i = 0; i < turns; i++) {
  const { event } = await requested;
  requested = next('clarify.requested');
  const resumed = next('attempt.started');
  await service.answer('bench', run.id, event.data.requestId, `a${i}`);
  const answeredAt = performance.now();
  const { at } = await resumed;
  if (i >= WARMUP) samples.push(at - answeredAt);
}

console.log(
  JSON.stringify({
    bench: 'clarify-roundtrip',
    rounds: samples.length,
    p50_ms: Number(percentile(samples, 50).toFixed(3)),
    p90_ms: Number(percentile(samples, 90).toFixed(3)),
    p99_ms: Number(percentile(samples, 99).toFixed(3)),
    max_ms: Number(Math.max(...samples).toFixed(3)),
    target_p50_ms: 5,
    target_p99_ms: 25,
    pass: percentile(samples, 50) <= 5 && percentile(samples, 99) <= 25,
  }),
);

await unsubscribe();
await worker.stop();
await service.close();
redis.disconnect();
subscriber.disconnect();
await redisServer.stop();
await workspaces.remove();
