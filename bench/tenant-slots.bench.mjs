// pnpm bench:tenant-slots — what TETHER_TENANT_MAX_RUNNING adds to each run, alone: the Redis work a
// worker does around an attempt when a cap is set (HGET of the run's tenant and acquireTenantSlot
// before the claim, releaseTenantSlot after the end), by BENCH_LANES attempts at once (default 50, the
// concurrency of bench:throughput's worker) on one tenant, under a cap that never binds (BENCH_CAP,
// default 1,000). With no cap none of it runs. One JSON line: the latency added before the claim and
// at the end (p50, p99), and the CPU per run of Redis (INFO cpu) and of this process (the worker's
// side). bench:throughput with BENCH_TENANT_CAP measures the whole run, but its spread on a shared
// machine is larger than this cost. Needs `pnpm build`. REDIS_URL, or a redis-server on PATH.
import { createKeys } from '../packages/store/dist/redis/index.js';
import { TenantSlots } from '../packages/store/dist/tenant-slots/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { benchRedis, percentile } from './lib/stack.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 50_000);
const LANES = Number(process.env.BENCH_LANES ?? 50);
const CAP = Number(process.env.BENCH_CAP ?? 1_000);
const WARMUP = 5_000;

const server = await benchRedis();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
const keys = createKeys(`{bench-slots-${process.pid}}`);
const slots = new TenantSlots({ redis, keys, cap: CAP, leaseMs: 15_000 });
const TENANT = 'bench';

/** Redis's CPU so far (µs), user and system. */
async function redisCpuMicros() {
  const info = await redis.info('cpu');
  const value = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? Number.NaN);
  return (value('used_cpu_user') + value('used_cpu_sys')) * 1e6;
}

/** `count` runs through `LANES` lanes: each takes a slot the way the worker does, then gives it back. */
async function pass(count, prefix) {
  const ids = Array.from({ length: count }, (_, i) => `run_${prefix}${String(i).padStart(20, '0')}`);
  for (let i = 0; i < ids.length; i += 1_000) {
    const pipeline = redis.pipeline();
    for (const id of ids.slice(i, i + 1_000)) pipeline.hset(keys.run(id).record, 'tenant', TENANT);
    await pipeline.exec();
  }
  const take = [];
  const release = [];
  let next = 0;
  const cpu = process.cpuUsage();
  const redisBefore = await redisCpuMicros();
  await Promise.all(
    Array.from({ length: LANES }, async (_, lane) => {
      while (next < ids.length) {
        const runId = ids[next++];
        const fence = `bench-w1:${lane}`;
        const t0 = performance.now();
        const tenant = await slots.tenantOf(runId);
        const taken = await slots.take(tenant, runId, fence);
        if (!taken.held) throw new Error(`the cap (${CAP}) bound: raise BENCH_CAP above BENCH_LANES`);
        const t1 = performance.now();
        await slots.release(tenant, runId, fence);
        release.push(performance.now() - t1);
        take.push(t1 - t0);
      }
    }),
  );
  const redisAfter = await redisCpuMicros();
  const used = process.cpuUsage(cpu);
  return {
    take,
    release,
    redisCpu: (redisAfter - redisBefore) / count,
    clientCpu: (used.user + used.system) / count,
  };
}

try {
  await pass(WARMUP, 'warm');
  const result = await pass(RUNS, 'timed');
  const round = (ms) => Number(ms.toFixed(3));
  const left = await redis.exists(...Object.values(keys.tenantSlots(TENANT)));
  console.log(
    JSON.stringify({
      bench: 'tenant-slots',
      runs: RUNS,
      lanes: LANES,
      tenant_max_running: CAP,
      take_ms_p50: round(percentile(result.take, 50)),
      take_ms_p99: round(percentile(result.take, 99)),
      release_ms_p50: round(percentile(result.release, 50)),
      release_ms_p99: round(percentile(result.release, 99)),
      redis_cpu_us_per_run: Math.round(result.redisCpu),
      worker_side_cpu_us_per_run: Math.round(result.clientCpu),
      // Every slot given back: the keys are gone.
      slot_keys_left: left,
      pass: left === 0,
    }),
  );
} finally {
  redis.disconnect();
  await server.stop();
}
