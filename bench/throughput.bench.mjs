// pnpm bench:throughput — trivial replay runs (one turn, `[{ content: 'ok' }]`) submitted
// over HTTP to one API process and completed by Tether worker processes, against raw BullMQ
// no-op jobs (Queue.addBulk + a Worker with concurrency 50 doing nothing) on the same Redis in
// the same run. One JSON line per kind of run: with no tools (`toolsets: []`, the trivial run)
// and with the default toolsets (the worker builds the seven tools and their prompt).
//
// BENCH_WORKERS worker processes of concurrency 50 each (default 1: the same shape as the raw
// side, one worker of concurrency 50). The end of a pass is observed the way the raw side's is,
// without touching the runs: the queue is polled every 10 ms until no job is waiting, active or
// delayed (a job leaves `active` only after its run's final step). Then, outside the timed
// window, every run of the pass is read back and must be `completed`.
// Needs `pnpm build`. REDIS_URL, or a redis-server on PATH.
//
// BENCH_TENANT_CAP=N: the workers run with TETHER_TENANT_MAX_RUNNING=N (every run is the one bench
// tenant's): above the workers' concurrency it never binds, and measures what taking and giving back a
// tenant slot costs per run; below it, runs past the cap wait and are woken as slots free.
//
// BENCH_WEBHOOKS=1: webhooks on and off in the same run. One `*` endpoint of the bench tenant, served
// by a receiver in this process that answers 200 at once, is enabled for half the passes and disabled
// for the others (PATCH, alternating), with trivial runs only; a webhooks pass ends when the queue is
// drained and the receiver has every run's `run.completed`. Each line gives its ratio to raw BullMQ, and
// the last one how much the ratio drops with webhooks on (goal: at most 10%).
//
// BENCH_CLUSTER=1: on a local Redis Cluster of three masters (REDIS_CLUSTER_NODES for the API and
// the workers; BENCH_SHARDS defaults to 3 there), and each line also gives the commands each master
// served during the timed Tether passes (INFO commandstats), and their spread around the mean.
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { createRequire } from 'node:module';
import { createKeys, QUEUE_NAME } from '../packages/queue/dist/index.js';
import { Cluster, Redis } from '../packages/queue/node_modules/ioredis/built/index.js';
import { freePort, startRedisCluster, startStack } from '../packages/testing/dist/scripts.js';
import { LeanConnection, postRequest } from './lib/http-client.mjs';
import { benchRedis, cpuMicros, median, tempDir } from './lib/stack.mjs';

// BullMQ as @tether/queue resolves it (the same version the workers run).
const { Queue, Worker } = createRequire(new URL('../packages/queue/package.json', import.meta.url))('bullmq');

const RUNS = Number(process.env.BENCH_RUNS ?? 3_000);
const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const WARMUP = 1_000;
const PASSES = 3;
const IN_FLIGHT = 64;
const CONCURRENCY = 50;
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
if (!Number.isInteger(WORKERS) || WORKERS < 1 || WORKERS > 16) {
  throw new Error(`BENCH_WORKERS must be an integer from 1 to 16, got ${process.env.BENCH_WORKERS}`);
}
const CLUSTER = process.env.BENCH_CLUSTER === '1';
// BENCH_SHARDS: TETHER_QUEUE_SHARDS of the API and workers (default 1, one queue as shipped; 3 on a cluster).
const SHARDS = Number(process.env.BENCH_SHARDS ?? (CLUSTER ? 3 : 1));
if (!Number.isInteger(SHARDS) || SHARDS < 1 || SHARDS > 64) {
  throw new Error(`BENCH_SHARDS must be an integer from 1 to 64, got ${process.env.BENCH_SHARDS}`);
}
const TENANT_CAP = Number(process.env.BENCH_TENANT_CAP ?? 0);
if (!Number.isInteger(TENANT_CAP) || TENANT_CAP < 0) {
  throw new Error(`BENCH_TENANT_CAP must be a whole number, got ${process.env.BENCH_TENANT_CAP}`);
}
const WEBHOOKS = process.env.BENCH_WEBHOOKS === '1';
const WEBHOOK_GOAL = 0.1;
const WORKER_IDS = Array.from({ length: WORKERS }, (_, i) => `bench-w${i + 1}`);
const GOAL = 0.34;
const KEY = 'sk_bench_throughput_0123';

/** The cluster's masters, for their command counts. */
const SPREAD_GOAL = 0.2;
const cluster = CLUSTER ? await startRedisCluster() : undefined;
const redisServer = cluster
  ? { url: `redis://${cluster.nodes[0]}`, stop: () => cluster.stop() }
  : await benchRedis();
/** A connection to the bench's Redis: one server's, or a Cluster client. */
function connect() {
  if (!cluster) return new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const seeds = cluster.nodes.map((node) => ({ host: node.split(':')[0], port: Number(node.split(':')[1]) }));
  return new Cluster(seeds, { redisOptions: { maxRetriesPerRequest: null } });
}
const workspaces = await tempDir('throughput');
const prefix = `{bench-tp-${process.pid}}`;
const keys = createKeys(prefix, SHARDS);
const redis = connect();

/** Raw BullMQ: `count` no-op jobs through one Worker of concurrency 50; jobs per second. */
async function rawBullmq(count) {
  const queue = new Queue('noop', { connection: redis, prefix: `{bench-raw-${process.pid}}` });
  const connection = connect();
  let done = 0;
  let resolveAll;
  const all = new Promise((resolve) => {
    resolveAll = resolve;
  });
  const worker = new Worker('noop', async () => {}, {
    connection,
    prefix: `{bench-raw-${process.pid}}`,
    concurrency: CONCURRENCY,
  });
  worker.on('completed', () => {
    if (++done === count) resolveAll();
  });
  await worker.waitUntilReady();
  const started = performance.now();
  for (let i = 0; i < count; i += 1_000) {
    const batch = Array.from({ length: Math.min(1_000, count - i) }, (_, j) => ({
      name: 'noop',
      data: { i: i + j },
      opts: { removeOnComplete: true, removeOnFail: true },
    }));
    await queue.addBulk(batch);
  }
  await all;
  const seconds = (performance.now() - started) / 1000;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  connection.disconnect();
  return count / seconds;
}

// Tether: the API process and the workers, ready once /readyz lists every worker.
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const stack = await startStack({
  redis: redisServer.url,
  port,
  workers: WORKER_IDS,
  workerNodeFlags: process.env.BENCH_WORKER_FLAGS ? process.env.BENCH_WORKER_FLAGS.split(' ') : [],
  env: {
    TETHER_QUEUE_PREFIX: prefix,
    TETHER_QUEUE_SHARDS: String(SHARDS),
    ...(cluster ? { REDIS_CLUSTER_NODES: cluster.nodes.join(',') } : {}),
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    LOG_LEVEL: 'warn',
    ...(WEBHOOKS
      ? {
          TETHER_SECRETS_KEY: randomBytes(32).toString('base64'),
          TETHER_WEBHOOK_ALLOW_HTTP: '1',
          TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
        }
      : {}),
  },
  apiEnv: {
    TETHER_API_KEYS: `bench:${KEY}`,
    TETHER_API_ID: 'bench-tp',
    TETHER_RATE_LIMIT_MAX: '1000000',
    HOST: '127.0.0.1',
  },
  workerEnv: {
    TETHER_WORKER_CONCURRENCY: String(CONCURRENCY),
    TETHER_SANDBOX: 'none',
    TETHER_TENANT_MAX_RUNNING: String(TENANT_CAP),
  },
  maxOutputChars: 100_000,
});
// However the benchmark ends, its processes end with it.
process.on('exit', () => {
  for (const { child } of stack.processes) if (child.exitCode === null) child.kill('SIGKILL');
});
let stopping = false;
for (const spawned of stack.processes) {
  spawned.exited.then(({ code, signal }) => {
    if (stopping) return;
    console.error(
      `${spawned.name} exited (code ${code}, signal ${signal}):\n${spawned.output().slice(-4_000)}`,
    );
    process.exitCode = 1;
  });
}

const BODIES = {
  default: '{"input":"say ok","model":{"provider":"replay","script":[{"content":"ok"}]}}',
  none: '{"input":"say ok","toolsets":[],"model":{"provider":"replay","script":[{"content":"ok"}]}}',
};
/** The kinds of pass: the two kinds of run, or, with BENCH_WEBHOOKS, trivial runs with webhooks off and on. */
const KINDS = WEBHOOKS
  ? { 'webhooks-off': 'none', 'webhooks-on': 'none' }
  : { default: 'default', none: 'none' };

// The webhook receiver: counts what it gets, answers 200 at once.
let webhooksReceived = 0;
const receiver = WEBHOOKS
  ? createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        webhooksReceived++;
        res.writeHead(200).end();
      });
    })
  : undefined;
let webhookId;
/** Enables or disables the bench tenant's one endpoint. */
async function setWebhooks(on) {
  const response = await fetch(`${base}/v1/webhooks/${webhookId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ enabled: on }),
  });
  if (response.status !== 200) throw new Error(`PATCH webhook: ${response.status} ${await response.text()}`);
}

// The load generator: IN_FLIGHT keep-alive connections, one request at a time each. BENCH_CLIENT=node
// uses node:http's client instead (it costs the load generator about twice the CPU).
const CLIENT = process.env.BENCH_CLIENT ?? 'lean';
if (CLIENT !== 'lean' && CLIENT !== 'node')
  throw new Error(`BENCH_CLIENT must be lean or node, got ${CLIENT}`);
const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
/** Opened once the API listens. */
let connections = [];
const requests = Object.fromEntries(
  Object.entries(BODIES).map(([kind, body]) => [
    kind,
    postRequest({
      host: `127.0.0.1:${port}`,
      path: '/v1/runs',
      headers: { Authorization: `Bearer ${KEY}` },
      body,
    }),
  ]),
);

/** Submits a run on lane `lane`; resolves with its id (from the Location header). */
async function submit(kind, lane) {
  if (CLIENT === 'lean') {
    const { status, headers, body } = await connections[lane].send(requests[kind], ['location']);
    if (status !== 202) throw new Error(`submit: ${status} ${body}`);
    return String(headers.location).split('/').at(-1);
  }
  return new Promise((resolve, reject) => {
    const req = request(`${base}/v1/runs`, {
      method: 'POST',
      agent,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 202
          ? resolve(String(res.headers.location).split('/').at(-1))
          : reject(new Error(`submit: ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end(BODIES[kind]);
  });
}

// The runs' queues (one per shard), read the way BullMQ's own tools do: one script per queue and poll.
const runQueues = Array.from(
  { length: SHARDS },
  (_, shard) => new Queue(QUEUE_NAME, { connection: redis, prefix: keys.shardPrefix(shard) }),
);
async function drained() {
  for (;;) {
    const counts = await Promise.all(
      runQueues.map((queue) => queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused')),
    );
    if (counts.every((c) => Object.values(c).every((n) => n === 0))) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Commands each server has served so far: the sum of `calls` over INFO commandstats. */
async function commandsPerServer(servers) {
  return Promise.all(
    servers.map(async (server) => {
      let calls = 0;
      for (const match of (await server.info('commandstats')).matchAll(/calls=(\d+)/g))
        calls += Number(match[1]);
      return calls;
    }),
  );
}

let failed = 0;
/** Every run must have completed; the others are counted as failed (and reported). */
async function verify(ids) {
  let statuses = [];
  if (cluster) {
    // The records are spread over the cluster's slots: one command each (outside the timed window).
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500).map((id) => redis.hget(keys.run(id).record, 'status'));
      statuses = statuses.concat(await Promise.all(chunk));
    }
  } else {
    const pipeline = redis.pipeline();
    for (const id of ids) pipeline.hget(keys.run(id).record, 'status');
    statuses = ((await pipeline.exec()) ?? []).map(([, status]) => status);
  }
  const notCompleted = statuses.filter((status) => status !== 'completed');
  if (notCompleted.length > 0) {
    failed += notCompleted.length;
    console.error(`${notCompleted.length} runs did not complete: ${[...new Set(notCompleted)].join(', ')}`);
  }
}

// CPU time per process, to show where a run's cost goes.
let processes = {};
function cpuSnapshot() {
  return Object.fromEntries(
    Object.entries(processes).map(([name, pids]) => [
      name,
      pids.reduce((sum, pid) => sum + cpuMicros(pid), 0),
    ]),
  );
}

/** Submits `count` runs, at most IN_FLIGHT at a time; resolves when all have ended (and, webhooks on, been delivered). */
async function tetherRuns(count, pass, cpu) {
  const kind = KINDS[pass];
  const webhooks = pass === 'webhooks-on';
  if (WEBHOOKS) await setWebhooks(webhooks);
  const receivedBefore = webhooksReceived;
  const ids = [];
  const before = cpuSnapshot();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      while (next < count) {
        next++;
        ids.push(await submit(kind, lane));
      }
    }),
  );
  await drained();
  while (webhooks && webhooksReceived - receivedBefore < count) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const rate = count / ((performance.now() - started) / 1000);
  const after = cpuSnapshot();
  for (const name of Object.keys(after)) {
    cpu[name] ??= [];
    cpu[name].push((after[name] - before[name]) / count);
  }
  await verify(ids);
  return rate;
}

try {
  if (CLIENT === 'lean') connections = Array.from({ length: IN_FLIGHT }, () => new LeanConnection(port));
  const servers = cluster ? redis.nodes('master') : [redis];
  const redisPids = await Promise.all(
    servers.map(async (server) => Number(/process_id:(\d+)/.exec(await server.info('server'))?.[1])),
  );
  processes = {
    api: stack.apis.map((api) => api.child.pid),
    workers: stack.workers.map((worker) => worker.child.pid),
    redis: redisPids,
    load_generator: [process.pid],
  };
  if (WEBHOOKS) {
    await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const response = await fetch(`${base}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiver.address().port}/hooks`, events: ['*'] }),
    });
    if (response.status !== 201) throw new Error(`POST webhook: ${response.status} ${await response.text()}`);
    webhookId = (await response.json()).id;
  }
  for (const kind of Object.keys(KINDS)) await tetherRuns(WARMUP, kind, {});
  await rawBullmq(2_000);

  const jobsPerSecond = await rawBullmq(JOBS);
  // Warm again after the raw run, as the raw side is warmed right before its own: the first timed
  // pass would otherwise start on a Redis just emptied of 20,000 jobs and Tether processes left idle.
  for (const kind of Object.keys(KINDS)) await tetherRuns(WARMUP / 2, kind, {});
  // Passes alternate between the two kinds, so neither gains from going second.
  const rates = Object.fromEntries(Object.keys(KINDS).map((kind) => [kind, []]));
  const cpu = Object.fromEntries(Object.keys(KINDS).map((kind) => [kind, {}]));
  const commandsBefore = await commandsPerServer(servers);
  for (let pass = 0; pass < PASSES; pass++) {
    for (const kind of Object.keys(KINDS)) rates[kind].push(await tetherRuns(RUNS, kind, cpu[kind]));
  }
  const commandsAfter = await commandsPerServer(servers);
  const served = commandsAfter.map((count, i) => count - (commandsBefore[i] ?? 0));
  const mean = served.reduce((a, b) => a + b, 0) / served.length;
  const spread = Math.max(...served.map((count) => Math.abs(count - mean) / mean));
  const ratios = {};
  for (const [pass, samples] of Object.entries(rates)) {
    const runsPerSecond = median(samples);
    const ratio = runsPerSecond / jobsPerSecond;
    ratios[pass] = ratio;
    console.log(
      JSON.stringify({
        bench: 'throughput',
        toolsets: KINDS[pass] === 'none' ? 'none' : 'default',
        ...(WEBHOOKS ? { webhooks: pass === 'webhooks-on' } : {}),
        runs: RUNS,
        passes: PASSES,
        tether_runs_per_s_each_pass: samples.map(Math.round),
        jobs: JOBS,
        workers: WORKERS,
        queue_shards: SHARDS,
        concurrency_per_worker: CONCURRENCY,
        tenant_max_running: TENANT_CAP || null,
        http_in_flight: IN_FLIGHT,
        http_client: CLIENT,
        tether_runs_per_s: Math.round(runsPerSecond),
        raw_bullmq_jobs_per_s: Math.round(jobsPerSecond),
        ratio: Number(ratio.toFixed(3)),
        // Median CPU µs per run of each process (Redis only when it is local), and their sum.
        cpu_us_per_run: Object.fromEntries(
          Object.entries(cpu[pass]).map(([name, values]) => [name, Math.round(median(values))]),
        ),
        failed_runs: failed,
        goal_ratio: GOAL,
        ...(cluster
          ? {
              redis_cluster_masters: served.length,
              // Commands each master served during the timed Tether passes (both kinds of run), from INFO commandstats.
              commands_per_master: served,
              spread_around_mean: Number(spread.toFixed(3)),
              goal_spread: SPREAD_GOAL,
            }
          : {}),
        pass: ratio >= GOAL && failed === 0 && (!cluster || spread <= SPREAD_GOAL),
      }),
    );
  }
  if (WEBHOOKS) {
    // How much the ratio to raw BullMQ drops with webhooks on, against off in the same run.
    const drop = 1 - ratios['webhooks-on'] / ratios['webhooks-off'];
    console.log(
      JSON.stringify({
        bench: 'throughput-webhooks',
        ratio_webhooks_off: Number(ratios['webhooks-off'].toFixed(3)),
        ratio_webhooks_on: Number(ratios['webhooks-on'].toFixed(3)),
        drop: Number(drop.toFixed(3)),
        webhooks_received: webhooksReceived,
        goal_drop: WEBHOOK_GOAL,
        pass: drop <= WEBHOOK_GOAL && failed === 0,
      }),
    );
  }
} finally {
  agent.destroy();
  receiver?.closeAllConnections();
  receiver?.close();
  for (const connection of connections) connection.close();
  stopping = true;
  await stack.stop();
  await Promise.all(runQueues.map((queue) => queue.close()));
  redis.disconnect();
  await redisServer.stop();
  await workspaces.remove();
}
