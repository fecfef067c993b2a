// pnpm bench:sse — SSE fan-out: 2,000 concurrent event streams on one API process
// (`apps/api/dist/server.js`), events appended with RunStore.append (XADD + PUBLISH in one
// script), delivery latency measured from the append call to the client reading the frame.
// Also counts the Redis connections the API process holds before, during and after the
// streams (CLIENT LIST by connection name): they must not grow with clients.
// One JSON line per scenario. Needs `pnpm build`. REDIS_URL, or a redis-server on PATH.
// Knobs: BENCH_CLIENTS, BENCH_ROUNDS, BENCH_ROUND_GAP_MS; BENCH_API_ARGS adds node flags to the
// API process (such as `--cpu-prof --cpu-prof-dir=/tmp/prof`).
import { Agent, request } from 'node:http';
import { createKeys, RunStore } from '../packages/queue/dist/index.js';
import { Redis } from '../packages/queue/node_modules/ioredis/built/index.js';
import { freePort, startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, percentile } from './lib/stack.mjs';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 2_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);
const ROUND_GAP_MS = Number(process.env.BENCH_ROUND_GAP_MS ?? 100);
/** Rounds first sent and not measured (JIT warm-up of both ends). */
const WARMUP_ROUNDS = 3;
const TARGET_P99_MS = 50;
const API_ID = `bench-sse-${process.pid}`;
const KEY = 'sk_bench_sse_0123456789';

const redisServer = await benchRedis();
const prefix = `{bench-sse-${process.pid}}`;
const keys = createKeys(prefix);
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
const store = new RunStore({ redis, keys });
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const auth = { authorization: `Bearer ${KEY}` };

// The API alone: ready once it answers /readyz (no worker to list).
const stack = await startStack({
  redis: redisServer.url,
  port,
  workers: 0,
  apiNodeFlags: process.env.BENCH_API_ARGS?.split(' ') ?? [],
  env: {
    TETHER_QUEUE_PREFIX: prefix,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_API_KEYS: `bench:${KEY}`,
    TETHER_API_ID: API_ID,
    TETHER_SSE_MAX_PER_TENANT: String(CLIENTS * 2),
    TETHER_RATE_LIMIT_MAX: '1000000',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
  },
  // Its request logs are not read: keep only what a failure would show.
  maxOutputChars: 8_000,
});

const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

function post(path, body) {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, {
      method: 'POST',
      agent,
      headers: { ...auth, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => (res.statusCode === 202 ? resolve(JSON.parse(text)) : reject(new Error(text))));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** The API's Redis connections, by the names it gives them. */
async function apiConnections() {
  const list = await redis.client('LIST');
  return list.split('\n').filter((line) => line.includes(`name=tether-api:${API_ID}`)).length;
}

/**
 * One SSE client: counts the frames it reads and records, for each, the time since the
 * append that produced it (the event's text is the append time, on this process's clock).
 */
function connect(runId, latencies) {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/runs/${runId}/events`, {
      agent: false,
      headers: { ...auth, accept: 'text/event-stream' },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`stream answered ${res.statusCode}`));
        return;
      }
      let live = () => {};
      const client = {
        received: 0,
        /** Resolves once `run.queued` arrived: the stream has replayed the log and is live. */
        live: new Promise((done) => {
          live = done;
        }),
        close: () => req.destroy(),
      };
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        const now = performance.now();
        buffer += chunk;
        // Frames are read with string searches, not JSON.parse: the client side of the
        // measurement should cost as little as it can on a machine the API shares.
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.includes('\nevent: run.queued\n')) live();
          if (!block.includes('\nevent: message.delta\n')) continue;
          const at = block.indexOf('"text":"');
          client.received++;
          latencies.push(now - Number(block.slice(at + 8, block.indexOf('"', at + 8))));
        }
      });
      resolve(client);
    });
    req.end();
  });
}

/** Waits (checking every 20 ms) until `condition` holds, or 10 s. */
async function until(condition) {
  const deadline = performance.now() + 10_000;
  while (!condition() && performance.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

async function scenario(name, runs, spread) {
  const runIds = [];
  for (let i = 0; i < runs; i++) {
    const { id } = await post('/v1/runs', {
      input: 'bench',
      model: { provider: 'replay', script: [{ content: 'ok' }] },
    });
    runIds.push(id);
  }
  const connectionsBefore = await apiConnections();
  const latencies = [];
  const clients = [];
  // Connect in batches, so 2,000 handshakes do not all queue on the listen backlog at once.
  for (let i = 0; i < CLIENTS; i += 200) {
    const batch = [];
    for (let j = i; j < Math.min(CLIENTS, i + 200); j++) batch.push(connect(runIds[j % runs], latencies));
    clients.push(...(await Promise.all(batch)));
  }
  await Promise.all(clients.map((client) => client.live));
  const connectionsDuring = await apiConnections();

  const perClient = ROUNDS;
  let started = performance.now();
  // Each round appends one event to every run: at once ('burst'), or spread evenly over the
  // round in 20 slices ('spread', as independent runs write).
  const slices = spread ? Math.min(20, runs) : 1;
  const append = (runId) =>
    store.append(runId, { type: 'message.delta', data: { text: String(performance.now()) } });
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    if (round === WARMUP_ROUNDS) {
      await until(() => clients.every((client) => client.received >= WARMUP_ROUNDS));
      latencies.length = 0;
      for (const client of clients) client.received = 0;
      started = performance.now();
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
  const delivered = clients.reduce((sum, client) => sum + client.received, 0);
  for (const client of clients) client.close();
  await new Promise((resolve) => setTimeout(resolve, 300));
  const connectionsAfter = await apiConnections();
  const p99 = percentile(latencies, 99);
  console.log(
    JSON.stringify({
      bench: 'sse-fanout',
      scenario: name,
      clients: CLIENTS,
      runs,
      clients_per_run: CLIENTS / runs,
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

try {
  // Pure fan-out, the worst case: every client follows one run, so each event goes to
  // 2,000 sockets at once. Then 200 runs with 10 clients each, all appending at once, and
  // appending spread over the round as independent runs do.
  await scenario('one-run', 1, false);
  await scenario('200-runs-burst', 200, false);
  await scenario('200-runs-spread', 200, true);
} finally {
  agent.destroy();
  await stack.stop();
  redis.disconnect();
  await redisServer.stop();
}
