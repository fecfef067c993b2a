// pnpm bench:memory — memory_recall over a full scope, and the start-up time the memory toolset adds
// to a run. A MemoryStore (the built @tether/store) on a private redis-server, a scope filled to its
// default limit of 1,000 entries (40 to 220 characters of fact-like text each, within the default
// 256 KB). Recall: the reader's copy warm (the usual case: one round trip that finds nothing new, then
// a search in memory), RECALLS queries of 1 to 3 words; then each recall right after another store
// replaced an entry (the change applied to the copy entry by entry); the first recall of a process
// (the whole scope loaded and indexed), on its own. Start-up: the worker's claim then prepare (as
// bench:session-startup measures it) for a run without the memory toolset and one with it in the full
// scope, interleaved, STARTS of each. One JSON line; goals ≤ 5 ms at the median for the warm recall
// and for the start-up added. Needs `pnpm build`.

import { loadWorkerConfig } from '../apps/worker/dist/config.js';
import { MemoryStore } from '../packages/store/dist/memory/index.js';
import { createKeys } from '../packages/store/dist/redis/index.js';
import { RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { rng } from './lib/source-gen.mjs';
import { benchRedis, median, percentile, tempDir } from './lib/stack.mjs';
import { interleaved, silent, timedStart } from './lib/startup.mjs';

const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000);
const RECALLS = Number(process.env.BENCH_RECALLS ?? 500);
const AFTER_WRITES = Number(process.env.BENCH_AFTER_WRITES ?? 200);
const COLD = Number(process.env.BENCH_COLD ?? 10);
const STARTS = Number(process.env.BENCH_STARTS ?? 100);
const WARMUP = 20;
const TARGET_RECALL_MS = 5;
const TARGET_ADDED_MS = 5;
const TENANT = 'bench';
const SCOPE = 'user-42';

const ms = (value) => Number(value.toFixed(3));

// Words of the kind memory entries hold: people, tools, files, conventions, decisions.
const WORDS = (
  'user prefers pnpm npm yarn node deno bun typescript javascript python rust go tests vitest jest ' +
  'biome eslint prettier build release deploy staging production ci pipeline docker compose kubernetes ' +
  'redis postgres mysql sqlite cache queue worker api route endpoint auth token session config env ' +
  'branch main review commit squash merge rebase changelog version semver tag monday friday morning ' +
  'always never avoid use keep write read file folder src docs readme architecture module package ' +
  'import export function class interface type schema migration index query latency timeout retry ' +
  'limit budget cost team lead reviewer owner customer tenant region europe asia french english ' +
  'chinese answers short detailed comments logs metrics alerts dashboard grafana sentry on call ' +
  'backup restore snapshot volume disk memory cpu cores machine laptop server cluster shard replica'
).split(' ');

function sentence(random, chars) {
  let out = '';
  while (out.length < chars) out += `${WORDS[Math.floor(random() * WORDS.length)]} `;
  return `${out.slice(0, chars).trim()}.`;
}

const redisServer = await benchRedis();
const workspaces = await tempDir('memory');
const keys = createKeys('{bench-memory}');
const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
await redis.flushdb();

// The full scope, written through the script as memory_save writes it.
const writer = new MemoryStore({ redis, keys });
const random = rng(42);
const ids = [];
for (let i = 0; ids.length < ENTRIES; i++) {
  const content = `${sentence(random, 40 + Math.floor(random() * 180))} (${i})`;
  const tags = random() < 0.5 ? [WORDS[Math.floor(random() * WORDS.length)]] : [];
  const outcome = await writer.save(TENANT, SCOPE, { content, tags });
  if (outcome.status !== 'saved')
    throw new Error(`the scope filled before ${ENTRIES} entries: ${outcome.status}`);
  ids.push(outcome.record.id);
}
const scopeBytes = Number(await redis.hget(keys.memory(TENANT, SCOPE).meta, 'bytes'));
const query = () =>
  Array.from({ length: 1 + Math.floor(random() * 3) }, () => WORDS[Math.floor(random() * WORDS.length)]).join(
    ' ',
  );

// The first recall of a process: the whole scope loaded and indexed.
const cold = [];
for (let i = 0; i < COLD; i++) {
  const fresh = new MemoryStore({ redis, keys });
  const begin = performance.now();
  await fresh.recall(TENANT, SCOPE, query(), 10);
  cold.push(performance.now() - begin);
}

// Warm: the copy is current.
const reader = new MemoryStore({ redis, keys });
await reader.recall(TENANT, SCOPE, '', 10);
const warm = [];
const hits = [];
for (let i = 0; i < WARMUP + RECALLS; i++) {
  const q = query();
  const begin = performance.now();
  const found = await reader.recall(TENANT, SCOPE, q, 10);
  if (i >= WARMUP) {
    warm.push(performance.now() - begin);
    hits.push(found.length);
  }
}
const recent = [];
for (let i = 0; i < RECALLS; i++) {
  const begin = performance.now();
  await reader.recall(TENANT, SCOPE, '', 10);
  recent.push(performance.now() - begin);
}
// A round trip of the same size, for scale: what the check for changes costs on its own.
const ping = [];
for (let i = 0; i < RECALLS; i++) {
  const begin = performance.now();
  await redis.hget(keys.memory(TENANT, SCOPE).meta, 'version');
  ping.push(performance.now() - begin);
}

// After another process's write: one entry replaced, then a recall.
const afterWrite = [];
for (let i = 0; i < AFTER_WRITES; i++) {
  const id = ids[Math.floor(random() * ids.length)];
  const outcome = await writer.save(TENANT, SCOPE, {
    content: `${sentence(random, 120)} (r${i})`,
    replaces: id,
  });
  if (outcome.status !== 'saved') throw new Error(`a replacement was refused: ${outcome.status}`);
  const begin = performance.now();
  await reader.recall(TENANT, SCOPE, query(), 10);
  afterWrite.push(performance.now() - begin);
}

// Start-up: claim + prepare of a run without memory and of a run with it, in the full scope.
const store = new RunStore({ redis, keys });
const runs = new RunService({ redis, keys, store });
const config = loadWorkerConfig({
  REDIS_URL: redisServer.url,
  TETHER_QUEUE_PREFIX: keys.queuePrefix,
  TETHER_WORKSPACE_ROOT: workspaces.dir,
  TETHER_WORKER_ID: 'bench-memory',
  TETHER_SANDBOX: 'none',
});
const memory = new MemoryStore({ redis, keys });
const bodies = {
  none: { input: 'How do I deploy?', model: { provider: 'replay' } },
  memory: {
    input: 'How do I deploy?',
    model: { provider: 'replay' },
    toolsets: ['base', 'planning', 'interaction', 'memory'],
    memory: { scope: SCOPE },
  },
};
let attempt = 0;
let promptChars = 0;
async function start(kind) {
  const { run } = await runs.submit(TENANT, bodies[kind]);
  const ctx = { runId: run.id, attempt: 1, fence: `bench:${++attempt}`, config, store, log: silent, memory };
  const { startMs, prepared } = await timedStart(ctx, kind);
  if (kind === 'memory') {
    const system = prepared.checkpoint.messages[0].content;
    if (!system.includes('# Memory\n')) throw new Error('the memory run has no memory block');
    promptChars = system.length - system.indexOf('# Memory\n');
  }
  await store.finalize(run.id, { status: 'cancelled' }, ctx.fence);
  return startMs;
}
// The first run of the scope in a process: the whole scope loaded (no index: a start needs none).
const coldStarts = [];
for (let i = 0; i < COLD; i++) {
  const fresh = new MemoryStore({ redis, keys });
  const { run } = await runs.submit(TENANT, bodies.memory);
  const ctx = {
    runId: run.id,
    attempt: 1,
    fence: `bench:${++attempt}`,
    config,
    store,
    log: silent,
    memory: fresh,
  };
  coldStarts.push((await timedStart(ctx, 'memory')).startMs);
  await store.finalize(run.id, { status: 'cancelled' }, ctx.fence);
}
const starts = await interleaved(['none', 'memory'], STARTS, WARMUP, start);

const warmMs = median(warm);
const added = median(starts.memory) - median(starts.none);
const pass = warmMs <= TARGET_RECALL_MS && added <= TARGET_ADDED_MS;
console.log(
  JSON.stringify({
    bench: 'memory',
    entries: ENTRIES,
    scope_kb: Math.round(scopeBytes / 1024),
    recalls: RECALLS,
    recall_median_ms: ms(warmMs),
    recall_p90_ms: ms(percentile(warm, 90)),
    recall_p99_ms: ms(percentile(warm, 99)),
    recall_hits_median: median(hits),
    recall_empty_query_median_ms: ms(median(recent)),
    round_trip_median_ms: ms(median(ping)),
    recall_after_write_median_ms: ms(median(afterWrite)),
    recall_after_write_p90_ms: ms(percentile(afterWrite, 90)),
    first_recall_in_process_median_ms: ms(median(cold)),
    starts: STARTS,
    start_no_memory_median_ms: ms(median(starts.none)),
    start_memory_median_ms: ms(median(starts.memory)),
    start_added_median_ms: ms(added),
    start_memory_p90_ms: ms(percentile(starts.memory, 90)),
    start_memory_first_in_process_median_ms: ms(median(coldStarts)),
    prompt_block_chars: promptChars,
    target_recall_ms: TARGET_RECALL_MS,
    target_added_ms: TARGET_ADDED_MS,
    pass,
  }),
);
if (!pass) process.exitCode = 1;

await runs.close();
redis.disconnect();
await redisServer.stop();
await workspaces.remove();
