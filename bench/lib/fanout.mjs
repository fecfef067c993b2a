// The fan-out benchmarks' common part (bench/sse-fanout, bench/ws-fanout): one API process
// (`apps/api/dist/server.js`) with no worker, events appended with RunStore.append (XADD +
// PUBLISH in one script), and rounds of appends whose delivery latency is measured from the
// append call to the client reading the frame (the event's text is the append time, on this
// process's clock). Also counts the Redis connections the API process holds before, during and
// after the clients (CLIENT LIST by connection name): they must not grow with clients, and the
// CPU time the API process and this one (the clients and the appends) used per delivery over the
// measured rounds, which a loaded machine changes far less than it changes latencies.
// Needs `pnpm build`. REDIS_URL, or a redis-server on PATH.
// Knobs: BENCH_CLIENTS, BENCH_ROUNDS, BENCH_ROUND_GAP_MS; BENCH_API_ARGS adds node flags to the
// API process (such as `--cpu-prof --cpu-prof-dir=/tmp/prof`).
import { Agent } from 'node:http';
import { loadavg } from 'node:os';
import { createKeys } from '../../packages/store/dist/redis/index.js';
import { RunStore } from '../../packages/store/dist/runs/index.js';
import { Redis } from '../../packages/store/node_modules/ioredis/built/index.js';
import { freePort, startStack } from '../../packages/testing/dist/scripts.js';
import { benchRedis, cpuMicros, percentile, postJson } from './stack.mjs';

export const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const ROUND_GAP_MS = Number(process.env.BENCH_ROUND_GAP_MS ?? 100);
/** Rounds first sent and not measured (JIT warm-up of both ends). */
const WARMUP_ROUNDS = 3;
const TARGET_P99_MS = 50;

/**
 * Starts Redis and the API (ready once it answers /readyz: no worker to list), with the stream
 * and socket caps above `CLIENTS`. `name` names the prefix, the API and its key.
 */
export async function startFanout(name, env = {}) {
  const apiId = `bench-${name}-${process.pid}`;
  const key = `sk_bench_${name.replace(/[^a-z]/g, '')}_0123456789`;
  const redisServer = await benchRedis();
  const prefix = `{bench-${name}-${process.pid}}`;
  const keys = createKeys(prefix);
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const store = new RunStore({ redis, keys });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${key}` };
  const stack = await startStack({
    redis: redisServer.url,
    port,
    workers: 0,
    apiNodeFlags: process.env.BENCH_API_ARGS?.split(' ') ?? [],
    env: {
      TETHER_QUEUE_PREFIX: prefix,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_API_KEYS: `bench:${key}`,
      TETHER_API_ID: apiId,
      TETHER_SSE_MAX_PER_TENANT: String(CLIENTS * 2),
      TETHER_RATE_LIMIT_MAX: '1000000',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      ...env,
    },
    // Its request logs are not read: keep only what a failure would show.
    maxOutputChars: 8_000,
  });
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

  /** POSTs `body` (JSON); resolves with the answer's body if its status is `status`. */
  function post(path, body, status = 202) {
    return postJson(`${base}${path}`, { agent, headers: auth, body, status });
  }

  /** The API's Redis connections, by the names it gives them. */
  async function apiConnections() {
    const list = await redis.client('LIST');
    return list.split('\n').filter((line) => line.includes(`name=tether-api:${apiId}`)).length;
  }

  async function stop() {
    agent.destroy();
    await stack.stop();
    redis.disconnect();
    await redisServer.stop();
  }

  const apiPid = stack.apis[0].child.pid;
  return { base, auth, store, post, apiConnections, apiCpuMicros: () => cpuMicros(apiPid), stop };
}

/** Waits (checking every 20 ms) until `condition` holds, or 10 s. */
async function until(condition) {
  const deadline = performance.now() + 10_000;
  while (!condition() && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * One scenario: `CLIENTS` clients spread over `runIds` (client i follows run i % runs), made by
 * `connect(runIndex, latencies)`, each resolving to `{ received, live, close }` (`live` resolves
 * once the client follows live; it pushes the latency of each `message.delta` it reads). Each
 * round appends one event to every run: at once ('burst'), or spread evenly over the round in 20
 * slices ('spread', as independent runs write). Prints one JSON line; `fields` adds to it.
 */
export async function measureFanout(fanout, { bench, scenario, runIds, spread, connect, fields = {} }) {
  const runs = runIds.length;
  const connectionsBefore = await fanout.apiConnections();
  const latencies = [];
  const clients = [];
  // Connect in batches, so 2,000 handshakes do not all queue on the listen backlog at once.
  for (let i = 0; i < CLIENTS; i += 200) {
    const batch = [];
    for (let j = i; j < Math.min(CLIENTS, i + 200); j++) batch.push(connect(j % runs, latencies));
    clients.push(...(await Promise.all(batch)));
  }
  await Promise.all(clients.map((client) => client.live));
  const connectionsDuring = await fanout.apiConnections();

  const perClient = ROUNDS;
  let started = performance.now();
  let apiCpuStart = 0;
  let clientCpuStart = process.cpuUsage();
  const slices = spread ? Math.min(20, runs) : 1;
  const append = (runId) =>
    fanout.store.append(runId, { type: 'message.delta', data: { text: String(performance.now()) } });
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    if (round === WARMUP_ROUNDS) {
      await until(() => clients.every((client) => client.received >= WARMUP_ROUNDS));
      latencies.length = 0;
      for (const client of clients) client.received = 0;
      started = performance.now();
      apiCpuStart = fanout.apiCpuMicros();
      clientCpuStart = process.cpuUsage();
    }
    const roundStart = performance.now();
    for (let slice = 0; slice < slices; slice++) {
      const sliceStart = roundStart + (slice * ROUND_GAP_MS) / slices;
      const wait = sliceStart - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      await Promise.all(runIds.filter((_, i) => i % slices === slice).map(append));
    }
    const wait = ROUND_GAP_MS - (performance.now() - roundStart);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  // Let the last round arrive.
  await until(() => clients.every((client) => client.received >= perClient));
  const elapsed = performance.now() - started;
  const apiCpu = fanout.apiCpuMicros() - apiCpuStart;
  const clientCpu = process.cpuUsage(clientCpuStart);
  const delivered = clients.reduce((sum, client) => sum + client.received, 0);
  for (const client of clients) client.close();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const connectionsAfter = await fanout.apiConnections();
  const p99 = percentile(latencies, 99);
  console.log(
    JSON.stringify({
      bench,
      scenario,
      clients: CLIENTS,
      ...fields,
      appends: spread ? 'spread' : 'burst',
      events_per_run: ROUNDS,
      round_ms: ROUND_GAP_MS,
      expected_deliveries: CLIENTS * perClient,
      delivered,
      deliveries_per_s: Math.round(delivered / (elapsed / 1000)),
      p50_ms: Number(percentile(latencies, 50).toFixed(2)),
      p90_ms: Number(percentile(latencies, 90).toFixed(2)),
      p99_ms: Number(p99.toFixed(2)),
      max_ms: Number(Math.max(...latencies).toFixed(2)),
      // CPU µs per delivery over the measured rounds (the API's in clock ticks of 10 ms).
      api_cpu_us_per_delivery: Number((apiCpu / delivered).toFixed(1)),
      client_cpu_us_per_delivery: Number(((clientCpu.user + clientCpu.system) / delivered).toFixed(1)),
      load_average: Number(loadavg()[0].toFixed(2)),
      api_redis_connections: {
        before: connectionsBefore,
        during: connectionsDuring,
        after: connectionsAfter,
      },
      target_p99_ms: TARGET_P99_MS,
      pass:
        p99 <= TARGET_P99_MS && delivered === CLIENTS * perClient && connectionsDuring === connectionsBefore,
    }),
  );
}
