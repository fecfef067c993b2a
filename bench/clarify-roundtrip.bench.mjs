// pnpm bench:clarify — the clarify round trip: from the answer call returning to the
// resumed attempt's next event (`attempt.started`), through a real worker process; then the
// client-tool round trip: from the output posted (the turn's only call) to the same event; then
// the approval round trip: from the decision posted (approve) to the held call starting
// (`tool.call`), over runs of ten held calls each. Three JSON lines: p50/p99 over many suspensions
// each. Needs `pnpm build`.
import { createKeys } from '../packages/store/dist/redis/index.js';
import { EventHub, RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
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

const turns = WARMUP + ROUNDS;

/**
 * One run of `turns` suspensions in a row: `ask(i)` is the turn's tool call, `requestedType` the
 * event that says the run waits, `release(event, i)` the answer. The time from `release` returning
 * to the resumed attempt's `startedType` event (`attempt.started` unless given), for the turns
 * after the warm-up.
 */
async function roundTrips(
  extra,
  ask,
  requestedType,
  release,
  startedType = 'attempt.started',
  length = turns,
) {
  const script = [...Array.from({ length }, (_, i) => ({ toolCalls: [ask(i)] })), { content: 'done' }];
  const { run } = await service.submit('bench', {
    input: 'round trips',
    model: { provider: 'replay', script },
    limits: { maxSteps: length + 1 },
    ...extra,
  });
  const waiters = [];
  const seen = new Set();
  const heard = (event) => {
    const now = performance.now();
    if (seen.has(event.id)) return;
    seen.add(event.id);
    for (const waiter of [...waiters]) {
      if (waiter.type === event.type) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve({ event, at: now });
      }
    }
  };
  const next = (type) => new Promise((resolve) => waiters.push({ type, resolve }));
  const samples = [];
  let requested = next(requestedType);
  const unsubscribe = await hub.subscribe(run.id, heard);
  // The worker may have taken the run and asked before the subscription: the log has it.
  for (const event of await store.readEvents(run.id)) heard(event);
  for (let i = 0; i < length; i++) {
    const { event } = await requested;
    requested = next(requestedType);
    const resumed = next(startedType);
    await release(run.id, event, i);
    const releasedAt = performance.now();
    const { at } = await resumed;
    samples.push(at - releasedAt);
  }
  await unsubscribe();
  return length === turns ? samples.slice(WARMUP) : samples;
}

function report(bench, samples, targets) {
  const p50 = percentile(samples, 50);
  const p99 = percentile(samples, 99);
  console.log(
    JSON.stringify({
      bench,
      rounds: samples.length,
      p50_ms: Number(p50.toFixed(3)),
      p90_ms: Number(percentile(samples, 90).toFixed(3)),
      p99_ms: Number(p99.toFixed(3)),
      max_ms: Number(Math.max(...samples).toFixed(3)),
      target_p50_ms: targets.p50,
      target_p99_ms: targets.p99,
      pass: p50 <= targets.p50 && p99 <= targets.p99,
    }),
  );
}

// One run that asks ROUNDS + WARMUP questions in a row.
report(
  'clarify-roundtrip',
  await roundTrips(
    { clarify: { timeoutMs: 600_000 } },
    (i) => ({ name: 'clarify', arguments: { question: `q${i}` } }),
    'clarify.requested',
    (runId, event, i) => service.answer('bench', runId, event.data.requestId, `a${i}`),
  ),
  { p50: 5, p99: 25 },
);

// One run that calls a client tool ROUNDS + WARMUP times in a row: the output posted → resumed.
const lookup = { name: 'lookup', description: 'Looks a key up', parameters: { type: 'object' } };
report(
  'client-tool-roundtrip',
  await roundTrips(
    { tools: [lookup], toolTimeoutMs: 600_000 },
    (i) => ({ name: 'lookup', arguments: { key: `k${i}` } }),
    'tool.requested',
    (runId, event, i) => service.postToolOutput('bench', runId, event.data.requestId, `v${i}`),
  ),
  { p50: 1, p99: 5 },
);

// Runs of HELD calls each held for approval, one after another, ROUNDS calls in all after the
// warm-up runs: the decision posted → the call starts. Runs of a few turns, as runs are: one run of
// hundreds of turns would time its growing transcript's save (and the replay script's replay) as
// much as the round trip.
const HELD = 10;
const approvalSamples = [];
for (let done = -WARMUP; done < ROUNDS; done += HELD) {
  const samples = await roundTrips(
    { approval: { tools: ['todo'], timeoutMs: 600_000 } },
    (i) => ({ name: 'todo', arguments: { todos: [{ id: '1', content: `step ${i}`, status: 'pending' }] } }),
    'approval.requested',
    (runId, event) =>
      service.decide('bench', runId, event.data.requestId, { decision: 'approve', by: 'bench' }),
    'tool.call',
    HELD,
  );
  if (done >= 0) approvalSamples.push(...samples);
}
report('approval-roundtrip', approvalSamples, { p50: 2, p99: 10 });

await worker.stop();
await service.close();
redis.disconnect();
subscriber.disconnect();
await redisServer.stop();
await workspaces.remove();
