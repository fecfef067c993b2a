// pnpm bench:redis-outage — how fast the API says no while Redis is down, and how fast the API and a
// worker are back once it returns. An API process and a worker process on a redis-server of the
// bench's own (AOF, fsync always), which is taken down (`kill`: SIGKILL, then restarted on the same
// port with its data; `hang`: SIGSTOP, then SIGCONT) while BENCH_REQUESTS requests
// (POST /v1/runs and GET /v1/runs/:id, BENCH_CONCURRENCY at a time) are sent from the moment it goes:
// time-to-503 of each (target p99 <= 250 ms for `kill`). A `hang` is only noticed when a command or a
// heartbeat PING goes unanswered (up to 2 s): its first requests wait that long, the rest do not.
// Then the time from Redis's return (it answers PING again) to the API's and the worker's "Redis is
// reachable again" lines, and to a run submitted then being completed. One JSON line per outage, one per mode with the medians.
// Knobs: BENCH_MODES (kill,hang), BENCH_OUTAGES (3 per mode), BENCH_REQUESTS (200),
// BENCH_CONCURRENCY (10). Needs `pnpm build` and redis-server on PATH.
import { Agent, request } from 'node:http';
import { freePort, startOwnRedis, startStack } from '../packages/testing/dist/scripts.js';
import { percentile, tempDir } from './lib/stack.mjs';

const MODES = (process.env.BENCH_MODES ?? 'kill,hang').split(',');
const OUTAGES = Number(process.env.BENCH_OUTAGES ?? 3);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const TARGET_P99_MS = 250;
const KEY = 'sk_bench_outage_0123456789';
const auth = { authorization: `Bearer ${KEY}` };

const redis = await startOwnRedis();
const workspaces = await tempDir('outage');
const prefix = `{bench-outage-${process.pid}}`;
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const stack = await startStack({
  redis: redis.url,
  port,
  workers: 1,
  workerNodeFlags: [],
  env: {
    TETHER_QUEUE_PREFIX: prefix,
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    LOG_LEVEL: 'info',
  },
  apiEnv: { TETHER_API_KEYS: `bench:${KEY}`, TETHER_RATE_LIMIT_MAX: '1000000', HOST: '127.0.0.1' },
  workerEnv: { TETHER_SANDBOX: 'none', TETHER_WORKER_CONCURRENCY: '4' },
});
const [api, worker] = stack.processes;

/** Resolves with the time at which `proc` has printed `count` lines containing `text`. */
async function printed(proc, text, count) {
  await proc.waitFor(new RegExp(`(?:${text}[\\s\\S]*?){${count}}`), 30_000);
  return performance.now();
}

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
/** One request; resolves with its status and how long it took (ms). */
function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const started = performance.now();
    const req = request(
      `${base}${path}`,
      {
        method,
        agent,
        headers: { ...auth, ...(payload ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode,
            ms: performance.now() - started,
            retryAfter: res.headers['retry-after'],
            body: text ? JSON.parse(text) : undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const run = { input: 'bench', model: { provider: 'replay', script: [{ content: 'ok' }] } };

async function submit() {
  const response = await call('POST', '/v1/runs', run);
  if (response.status !== 202)
    throw new Error(`submit answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body.id;
}

/** Polls the run until it has ended (a bench may poll: no event to await across an outage). */
async function completed(runId) {
  for (;;) {
    const response = await call('GET', `/v1/runs/${runId}`);
    if (response.status === 200 && ['completed', 'failed', 'cancelled'].includes(response.body.status)) {
      return response.body.status;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** REQUESTS requests, CONCURRENCY at a time, alternating a submission and a read. */
async function burst(runId) {
  const results = [];
  let next = 0;
  const lane = async () => {
    while (next < REQUESTS) {
      const i = next++;
      results.push(await (i % 2 === 0 ? call('POST', '/v1/runs', run) : call('GET', `/v1/runs/${runId}`)));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return results;
}

const summary = (values) => ({
  p50: Number(percentile(values, 50).toFixed(1)),
  p99: Number(percentile(values, 99).toFixed(1)),
});
const median = (values) => percentile(values, 50);

// Warm both processes up before the first outage.
for (let i = 0; i < 50; i++) await completed(await submit());

let outages = 0;
for (const mode of MODES) {
  const lines = [];
  for (let round = 1; round <= OUTAGES; round++) {
    outages++;
    const known = await submit();
    await completed(known);
    if (mode === 'kill') await redis.kill();
    else redis.pause();
    const results = await burst(known);
    await Promise.all([
      printed(api, 'Redis is unreachable', outages),
      printed(worker, 'Redis is unreachable', outages),
    ]);
    const restarting = performance.now();
    if (mode === 'kill') await redis.restart();
    else redis.resume();
    // Redis answers PING again (restart() waits for that): the processes' clocks start here.
    const back = performance.now();
    const [apiBack, workerBack] = await Promise.all([
      printed(api, 'Redis is reachable again', outages),
      printed(worker, 'Redis is reachable again', outages),
    ]);
    const after = await submit();
    const status = await completed(after);
    const done = performance.now();
    const unavailable = results.filter((r) => r.status === 503 && r.body?.error?.code === 'ERR_UNAVAILABLE');
    const times = unavailable.map((r) => r.ms);
    const statuses = {};
    for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    const line = {
      bench: 'redis-outage',
      mode,
      outage: round,
      requests: results.length,
      concurrency: CONCURRENCY,
      statuses,
      with_retry_after: unavailable.filter((r) => /^\d+$/.test(r.retryAfter ?? '')).length,
      time_to_503_p50_ms: summary(times).p50,
      time_to_503_p99_ms: summary(times).p99,
      time_to_503_max_ms: Number(Math.max(...times).toFixed(1)),
      redis_start_ms: Math.round(back - restarting),
      api_back_ms: Math.round(apiBack - back),
      worker_back_ms: Math.round(workerBack - back),
      run_after_ms: Math.round(done - back),
      run_after_status: status,
    };
    lines.push(line);
    console.log(JSON.stringify(line));
  }
  const p99 = median(lines.map((l) => l.time_to_503_p99_ms));
  console.log(
    JSON.stringify({
      bench: 'redis-outage',
      mode,
      outages: lines.length,
      median_time_to_503_p50_ms: median(lines.map((l) => l.time_to_503_p50_ms)),
      median_time_to_503_p99_ms: p99,
      median_api_back_ms: median(lines.map((l) => l.api_back_ms)),
      median_worker_back_ms: median(lines.map((l) => l.worker_back_ms)),
      median_run_after_ms: median(lines.map((l) => l.run_after_ms)),
      target_p99_ms: mode === 'kill' ? TARGET_P99_MS : null,
      pass: mode === 'kill' ? p99 <= TARGET_P99_MS : null,
    }),
  );
}

const logged = (proc) => ({
  unhandled_error_events: proc.output().split('Unhandled error event').length - 1,
  outage_warnings: proc.output().split('Redis is unreachable').length - 1,
});
console.log(JSON.stringify({ bench: 'redis-outage', outages, api: logged(api), worker: logged(worker) }));

agent.destroy();
await stack.stop();
await redis.stop();
await workspaces.remove();
