// pnpm bench:batch-submit — how long one API takes to accept a batch of 1,000 runs
// (POST /v1/batches, all or none: each body checked, the batch and its runs written, their jobs
// queued), from sending the request to reading its 202. One API process, no workers (the runs
// stay queued). One JSON line: each try's time, their median and the goal (< 1 s). Needs
// `pnpm build`.
import { Agent } from 'node:http';
import { freePort, startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, postJson, tempDir } from './lib/stack.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 1_000);
const TRIES = Number(process.env.BENCH_TRIES ?? 5);
const GOAL_MS = 1_000;
const KEY = 'sk_bench_batch_submit_0123456789';

const redisServer = await benchRedis();
const workspaces = await tempDir('batch-submit');
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const stack = await startStack({
  redis: redisServer.url,
  port,
  workers: 0,
  env: {
    TETHER_QUEUE_PREFIX: `{bench-batch-${process.pid}}`,
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_API_KEYS: `bench:${KEY}`,
    TETHER_RATE_LIMIT_MAX: '1000000',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  },
});
const agent = new Agent({ keepAlive: true });
const body = {
  runs: Array.from({ length: RUNS }, (_, i) => ({
    input: `Triage issue ${i}: read the report, find the cause, and say what to change.`,
    model: { provider: 'replay', script: [{ content: 'done' }] },
    toolsets: ['base', 'planning'],
    metadata: { issue: String(i) },
  })),
};
const post = () =>
  postJson(`${base}/v1/batches`, { agent, headers: { authorization: `Bearer ${KEY}` }, body, status: 202 });

await post(); // warm-up: the first request compiles the route's schema and loads the scripts
const times = [];
for (let i = 0; i < TRIES; i++) {
  const start = performance.now();
  const answer = await post();
  times.push(performance.now() - start);
  if (answer.runIds.length !== RUNS)
    throw new Error(`the batch holds ${answer.runIds.length} runs, not ${RUNS}`);
}
const sorted = [...times].sort((a, b) => a - b);
const medianMs = sorted[Math.floor(sorted.length / 2)];
console.log(
  JSON.stringify({
    bench: 'batch-submit',
    runs: RUNS,
    triesMs: times.map((ms) => Math.round(ms)),
    medianMs: Math.round(medianMs),
    goalMs: GOAL_MS,
    ok: medianMs < GOAL_MS,
  }),
);
agent.destroy();
await stack.stop();
await redisServer.stop();
await workspaces.remove();
