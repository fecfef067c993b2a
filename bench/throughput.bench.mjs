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
// BENCH_PASSES: timed passes per kind of run (and per stack with BENCH_METRICS=1); default 3.
//
// BENCH_WEBHOOKS=1: webhooks on and off in the same run. One `*` endpoint of the bench tenant, served
// by a receiver in this process that answers 200 at once, is enabled for half the passes and disabled
// for the others (PATCH, alternating), with trivial runs only; a webhooks pass ends when the queue is
// drained and the receiver has every run's `run.completed`. Each line gives its ratio to raw BullMQ, and
// the last one how much the ratio drops with webhooks on (goal: at most 10%).
//
// BENCH_METRICS=1 (pnpm bench:throughput-metrics): a second stack beside the first, its workers with metrics on
// (TETHER_METRICS_PORT) and both its API's and its workers' /metrics scraped every second (Prometheus
// does every 15 s by default) while its passes run. The passes alternate between the stacks (off,
// on, off, on, …), so that both see the same machine; each line names its stack (`metrics`), and a
// last line gives how much the ratio to raw BullMQ dropped with metrics on (goal: at most 10%).
//
// BENCH_WORKER_ARGS / BENCH_API_ARGS: Node flags for the worker processes / the API process, such as
// `--cpu-prof --cpu-prof-dir=/tmp/prof` for CPU profiles (written when the bench stops them).
//
// BENCH_CLUSTER=1: on a local Redis Cluster of three masters (REDIS_CLUSTER_NODES for the API and
// the workers; BENCH_SHARDS defaults to 3 there), and each line also gives the commands each master
// served during the timed Tether passes (INFO commandstats), and their spread around the mean.
import { randomBytes } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { createRequire } from 'node:module';
import { createKeys, QUEUE_NAME } from '../packages/store/dist/redis/index.js';
import { Cluster, Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { freePort, startRedisCluster, startStack } from '../packages/testing/dist/scripts.js';
import { LeanConnection, postRequest } from './lib/http-client.mjs';
import { benchRedis, cpuMicros, median, tempDir } from './lib/stack.mjs';

// BullMQ as @tether/store resolves it (the same version the workers run).
const { Queue, Worker } = createRequire(new URL('../packages/store/package.json', import.meta.url))('bullmq');

const RUNS = Number(process.env.BENCH_RUNS ?? 3_000);
const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const WARMUP = 1_000;
// BENCH_PASSES: timed passes per kind of run (and per stack with BENCH_METRICS=1); default 3.
const PASSES = Number(process.env.BENCH_PASSES ?? 3);
if (!Number.isInteger(PASSES) || PASSES < 1 || PASSES > 50) {
  throw new Error(`BENCH_PASSES must be an integer from 1 to 50, got ${process.env.BENCH_PASSES}`);
}
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

// Tether: the API process and the workers, ready once /readyz lists every worker. With
// BENCH_METRICS=1, a second such stack with metrics on, under a queue prefix of its own.
const METRICS = process.env.BENCH_METRICS === '1';
const SCRAPE_MS = 1_000;
const METRICS_GOAL_DROP = 0.1;
const WEBHOOKS = process.env.BENCH_WEBHOOKS === '1';
const WEBHOOK_GOAL = 0.1;
if (METRICS && WEBHOOKS)
  throw new Error('BENCH_METRICS and BENCH_WEBHOOKS measure one thing each: set one of them');

/** One stack (API and workers) on its own queue prefix, and what the load generator needs of it. */
async function startSide(name, { metrics }) {
  const port = await freePort();
  const sidePrefix = `{bench-tp-${name}-${process.pid}}`;
  const metricsPorts = metrics ? await Promise.all(WORKER_IDS.map(() => freePort())) : [];
  const stack = await startStack({
    redis: redisServer.url,
    port,
    workers: WORKER_IDS.map((id) => `${id}-${name}`),
    workerNodeFlags: (process.env.BENCH_WORKER_ARGS ?? '').split(' ').filter(Boolean),
    apiNodeFlags: (process.env.BENCH_API_ARGS ?? '').split(' ').filter(Boolean),
    env: {
      TETHER_QUEUE_PREFIX: sidePrefix,
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
      TETHER_API_ID: `bench-tp-${name}`,
      TETHER_RATE_LIMIT_MAX: '1000000',
      HOST: '127.0.0.1',
    },
    workerEnv: (_id, index) => ({
      TETHER_WORKER_CONCURRENCY: String(CONCURRENCY),
      TETHER_SANDBOX: 'none',
      TETHER_TENANT_MAX_RUNNING: String(TENANT_CAP),
      ...(metrics ? { TETHER_METRICS_PORT: String(metricsPorts[index]) } : {}),
    }),
    maxOutputChars: 100_000,
    // A loaded machine starts four processes slowly.
    readyTimeoutMs: 120_000,
  });
  const sideKeys = createKeys(sidePrefix, SHARDS);
  return {
    name,
    metrics,
    port,
    stack,
    keys: sideKeys,
    connections: [],
    // The /metrics pages a Prometheus would scrape: the API's and each worker's.
    scrapeUrls: metrics
      ? [`http://127.0.0.1:${port}/metrics`, ...metricsPorts.map((p) => `http://127.0.0.1:${p}/metrics`)]
      : [],
    requests: Object.fromEntries(
      Object.entries(BODIES).map(([kind, body]) => [
        kind,
        postRequest({
          host: `127.0.0.1:${port}`,
          path: '/v1/runs',
          headers: { Authorization: `Bearer ${KEY}` },
          body,
        }),
      ]),
    ),
    // The runs' queues (one per shard), read the way BullMQ's own tools do: one script per queue and poll.
    // skipMetasUpdate: a Queue opened without it writes BullMQ's defaults into the queue's meta, the
    // event stream's cap among them (10,000 where Tether sets 100), and the bench would then measure a
    // queue no deployment runs.
    runQueues: Array.from(
      { length: SHARDS },
      (_, shard) =>
        new Queue(QUEUE_NAME, {
          connection: redis,
          prefix: sideKeys.shardPrefix(shard),
          skipMetasUpdate: true,
        }),
    ),
  };
}

const BODIES = {
  default: '{"input":"say ok","model":{"provider":"replay","script":[{"content":"ok"}]}}',
  none: '{"input":"say ok","toolsets":[],"model":{"provider":"replay","script":[{"content":"ok"}]}}',
};

/** The kinds of pass (each a body): the two kinds of run, or, with BENCH_WEBHOOKS, trivial runs with webhooks off and on. */
// BENCH_KINDS=none (or default): only that kind of run, as `pnpm bench:guard` takes the trivial runs.
const ONLY = process.env.BENCH_KINDS;
if (ONLY !== undefined && ONLY !== 'none' && ONLY !== 'default') {
  throw new Error(`BENCH_KINDS must be none or default, got ${ONLY}`);
}
const KINDS = WEBHOOKS
  ? { 'webhooks-off': 'none', 'webhooks-on': 'none' }
  : ONLY
    ? { [ONLY]: ONLY }
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
/** Enables or disables the bench tenant's one endpoint on `side`. */
async function setWebhooks(side, on) {
  const response = await fetch(`http://127.0.0.1:${side.port}/v1/webhooks/${webhookId}`, {
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

/** Submits a run on lane `lane` of `side`; resolves with its id (from the Location header). */
async function submit(side, kind, lane) {
  if (CLIENT === 'lean') {
    const { status, headers, body } = await side.connections[lane].send(side.requests[kind], ['location']);
    if (status !== 202) throw new Error(`submit: ${status} ${body}`);
    return String(headers.location).split('/').at(-1);
  }
  return new Promise((resolve, reject) => {
    const req = request(`http://127.0.0.1:${side.port}/v1/runs`, {
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

async function drained(side) {
  for (;;) {
    const counts = await Promise.all(
      side.runQueues.map((queue) => queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused')),
    );
    if (counts.every((c) => Object.values(c).every((n) => n === 0))) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Scrapes `side`'s /metrics pages every SCRAPE_MS until the returned stop is called; counts the scrapes. */
function scraping(side) {
  if (side.scrapeUrls.length === 0) return async () => 0;
  let scrapes = 0;
  const scrape = async () => {
    for (const url of side.scrapeUrls) {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`scrape ${url}: ${response.status}`);
      await response.text();
      scrapes++;
    }
  };
  const timer = setInterval(() => {
    scrape().catch((error) => {
      console.error(String(error));
      process.exitCode = 1;
    });
  }, SCRAPE_MS);
  return async () => {
    clearInterval(timer);
    return scrapes;
  };
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
async function verify(side, ids) {
  const keys = side.keys;
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
function cpuSnapshot(processes) {
  return Object.fromEntries(
    Object.entries(processes).map(([name, pids]) => [
      name,
      pids.reduce((sum, pid) => sum + cpuMicros(pid), 0),
    ]),
  );
}

/**
 * Submits `count` runs of the pass's kind to `side`, at most IN_FLIGHT at a time; resolves when all
 * have ended (and, webhooks on, been delivered).
 */
async function tetherRuns(side, count, pass, cpu) {
  const kind = KINDS[pass];
  const webhooks = pass === 'webhooks-on';
  if (WEBHOOKS) await setWebhooks(side, webhooks);
  const receivedBefore = webhooksReceived;
  const ids = [];
  // Fresh connections each pass: a stack idle while the other (or raw BullMQ) runs may have closed
  // its keep-alive connections (the API's keep-alive timeout), and a closed one would never answer.
  if (CLIENT === 'lean') {
    for (const connection of side.connections) connection.close();
    side.connections = Array.from({ length: IN_FLIGHT }, () => new LeanConnection(side.port));
  }
  const before = cpuSnapshot(side.processes);
  const stopScraping = scraping(side);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      while (next < count) {
        next++;
        ids.push(await submit(side, kind, lane));
      }
    }),
  );
  await drained(side);
  while (webhooks && webhooksReceived - receivedBefore < count) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const rate = count / ((performance.now() - started) / 1000);
  side.scrapes = (side.scrapes ?? 0) + (await stopScraping());
  const after = cpuSnapshot(side.processes);
  for (const name of Object.keys(after)) {
    cpu[name] ??= [];
    cpu[name].push((after[name] - before[name]) / count);
  }
  await verify(side, ids);
  return rate;
}

// The stacks: metrics off (as shipped), and with BENCH_METRICS=1 one with metrics on.
const sides = [await startSide('off', { metrics: false })];
if (METRICS) sides.push(await startSide('on', { metrics: true }));
// However the benchmark ends, its processes end with it.
let stopping = false;
process.on('exit', () => {
  for (const side of sides) {
    for (const { child } of side.stack.processes) if (child.exitCode === null) child.kill('SIGKILL');
  }
});
for (const side of sides) {
  for (const spawned of side.stack.processes) {
    spawned.exited.then(({ code, signal }) => {
      if (stopping) return;
      console.error(
        `${spawned.name} exited (code ${code}, signal ${signal}):\n${spawned.output().slice(-4_000)}`,
      );
      process.exitCode = 1;
    });
  }
}

try {
  const servers = cluster ? redis.nodes('master') : [redis];
  const redisPids = await Promise.all(
    servers.map(async (server) => Number(/process_id:(\d+)/.exec(await server.info('server'))?.[1])),
  );
  for (const side of sides) {
    side.processes = {
      api: side.stack.apis.map((api) => api.child.pid),
      workers: side.stack.workers.map((worker) => worker.child.pid),
      redis: redisPids,
      load_generator: [process.pid],
    };
  }
  if (WEBHOOKS) {
    await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const response = await fetch(`http://127.0.0.1:${sides[0].port}/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiver.address().port}/hooks`, events: ['*'] }),
    });
    if (response.status !== 201) throw new Error(`POST webhook: ${response.status} ${await response.text()}`);
    webhookId = (await response.json()).id;
  }
  const kinds = Object.keys(KINDS);
  for (const side of sides) for (const kind of kinds) await tetherRuns(side, WARMUP, kind, {});
  await rawBullmq(2_000);

  const jobsPerSecond = await rawBullmq(JOBS);
  // Warm again after the raw run, as the raw side is warmed right before its own: the first timed
  // pass would otherwise start on a Redis just emptied of 20,000 jobs and Tether processes left idle.
  for (const side of sides) for (const kind of kinds) await tetherRuns(side, WARMUP / 2, kind, {});
  // Passes alternate between the kinds of run and between the stacks, so none gains from going second.
  const rates = Object.fromEntries(
    sides.map((side) => [side.name, Object.fromEntries(kinds.map((k) => [k, []]))]),
  );
  const cpu = Object.fromEntries(
    sides.map((side) => [side.name, Object.fromEntries(kinds.map((k) => [k, {}]))]),
  );
  const commandsBefore = await commandsPerServer(servers);
  for (let pass = 0; pass < PASSES; pass++) {
    for (const kind of kinds) {
      for (const side of sides) {
        rates[side.name][kind].push(await tetherRuns(side, RUNS, kind, cpu[side.name][kind]));
      }
    }
  }
  const commandsAfter = await commandsPerServer(servers);
  const served = commandsAfter.map((count, i) => count - (commandsBefore[i] ?? 0));
  const mean = served.reduce((a, b) => a + b, 0) / served.length;
  const spread = Math.max(...served.map((count) => Math.abs(count - mean) / mean));
  const ratios = {};
  for (const side of sides) {
    for (const [pass, samples] of Object.entries(rates[side.name])) {
      const runsPerSecond = median(samples);
      const ratio = runsPerSecond / jobsPerSecond;
      ratios[side.name] ??= {};
      ratios[side.name][pass] = ratio;
      console.log(
        JSON.stringify({
          bench: 'throughput',
          toolsets: KINDS[pass],
          ...(WEBHOOKS ? { webhooks: pass === 'webhooks-on' } : {}),
          ...(METRICS ? { metrics: side.metrics, scrapes_per_s: 1000 / SCRAPE_MS } : {}),
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
            Object.entries(cpu[side.name][pass]).map(([name, values]) => [name, Math.round(median(values))]),
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
  }
  if (WEBHOOKS) {
    // How much the ratio to raw BullMQ drops with webhooks on, against off in the same run.
    const { 'webhooks-off': off, 'webhooks-on': on } = ratios[sides[0].name];
    const drop = 1 - on / off;
    console.log(
      JSON.stringify({
        bench: 'throughput-webhooks',
        ratio_webhooks_off: Number(off.toFixed(3)),
        ratio_webhooks_on: Number(on.toFixed(3)),
        drop: Number(drop.toFixed(3)),
        webhooks_received: webhooksReceived,
        // The workers' CPU per run (median of the passes), where webhooks cost most.
        worker_cpu_us_per_run: {
          off: Math.round(median(cpu[sides[0].name]['webhooks-off'].workers ?? [0])),
          on: Math.round(median(cpu[sides[0].name]['webhooks-on'].workers ?? [0])),
        },
        passes: PASSES,
        goal_drop: WEBHOOK_GOAL,
        pass: drop <= WEBHOOK_GOAL && failed === 0,
      }),
    );
  }
  if (METRICS) {
    // How much lower the ratio to raw BullMQ is with metrics on than off, per kind of run.
    const drop = Object.fromEntries(
      kinds.map((kind) => [kind, Number((1 - ratios.on[kind] / ratios.off[kind]).toFixed(3))]),
    );
    console.log(
      JSON.stringify({
        bench: 'throughput-metrics',
        ratio_off: Object.fromEntries(kinds.map((kind) => [kind, Number(ratios.off[kind].toFixed(3))])),
        ratio_on: Object.fromEntries(kinds.map((kind) => [kind, Number(ratios.on[kind].toFixed(3))])),
        drop,
        // The workers' CPU per run (median of the passes), the cost of the metrics where it is paid.
        worker_cpu_us_per_run: Object.fromEntries(
          kinds.map((kind) => [
            kind,
            Object.fromEntries(
              sides.map((side) => [side.name, Math.round(median(cpu[side.name][kind].workers ?? [0]))]),
            ),
          ]),
        ),
        passes: PASSES,
        scrapes: sides[1].scrapes,
        goal_drop: METRICS_GOAL_DROP,
        pass: failed === 0 && Object.values(drop).every((value) => value <= METRICS_GOAL_DROP),
      }),
    );
  }
} finally {
  agent.destroy();
  receiver?.closeAllConnections();
  receiver?.close();
  stopping = true;
  for (const side of sides) {
    for (const connection of side.connections) connection.close();
    await side.stack.stop();
    await Promise.all(side.runQueues.map((queue) => queue.close()));
  }
  redis.disconnect();
  await redisServer.stop();
  await workspaces.remove();
}
