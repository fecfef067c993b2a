// pnpm bench:crew — a crew parent delegating 100 replay children, against the same 100 runs submitted
// standalone. Each variant has a deployment of its own: a redis-server and 2 worker processes of
// concurrency 4 (8 slots; TETHER_SANDBOX=none, TETHER_CREW_MAX_CHILDREN=100), no API (runs are
// submitted with RunService.submit). One JSON line per variant:
// - `batches`: TETHER_CREW_MAX_PARALLEL=10; the parent (toolsets base, planning, crew; a replay model)
//   makes 10 delegate_parallel calls of 10 tasks, then answers.
// - `one-call`: TETHER_CREW_MAX_PARALLEL=100; one delegate_parallel call of 100 tasks.
// Each child plays a replay `children` script matched on its goal: one write_file (notes-part-<k>.md,
// k the task's place in a batch of 10: the replay schema holds at most 64 children entries, so 100
// distinct files cannot be scripted), then a final summary. The standalone runs play the same scripts
// with the toolsets a child gets (base, planning).
//
// Cost per child run: for the crew, from the parent's first `child.started` to its last
// `child.finished` (event ids are Redis's ms), over 100; standalone, from the first submit to the last
// `run.completed`, over 100. Crew and standalone passes alternate, BENCH_ROUNDS rounds (default 5) after
// a warm-up round; the line gives each round's figures, the medians and the ratio of the medians (goal
// ≤ 1.5), the CPU µs per child of the workers, Redis and this process (from /proc), and for `batches`
// the time between calls (a call's last child.finished to the next call's first child.started: the
// parent's wake, claim, turn and delegation, while no child runs) and its share of the crew's window.
//
// Checks (the bench fails with a message naming the check): every child and standalone run ends
// `completed` with its file written; the parent completes; its delegate_parallel results list 100
// entries, all completed, indexes in order, the children's ids in order; the active BullMQ jobs of
// the deployment (every shard), sampled every 5 ms during each pass, never exceed the 8 slots.
// Needs `pnpm build`. REDIS_URL, or a redis-server on PATH. BENCH_VARIANT=batches or one-call runs only
// that variant; BENCH_WORKER_ARGS adds Node flags to the workers (`--cpu-prof --cpu-prof-dir=/tmp/prof`).
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { createKeys } from '../packages/store/dist/redis/index.js';
import { RunService, RunStore } from '../packages/store/dist/runs/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, cpuMicros, listedIn, median, tempDir, WORKER_NODE_OPTIONS } from './lib/stack.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1 || ROUNDS > 100) {
  throw new Error(`BENCH_ROUNDS must be an integer from 1 to 100, got ${process.env.BENCH_ROUNDS}`);
}
const CHILDREN = 100;
const WORKERS = 2;
const CONCURRENCY = 4;
const SLOTS = WORKERS * CONCURRENCY;
const GOAL_RATIO = 1.5;
const SAMPLE_MS = 5;
const TENANT = 'bench';
const VARIANTS = [
  { name: 'batches', maxParallel: 10, perCall: 10 },
  { name: 'one-call', maxParallel: 100, perCall: 100 },
].filter((variant) => !process.env.BENCH_VARIANT || variant.name === process.env.BENCH_VARIANT);
if (VARIANTS.length === 0) {
  throw new Error(`BENCH_VARIANT must be batches or one-call, got ${process.env.BENCH_VARIANT}`);
}
const WORKER_FLAGS = [
  ...WORKER_NODE_OPTIONS.split(' '),
  ...(process.env.BENCH_WORKER_ARGS ?? '').split(' '),
].filter(Boolean);

const CONTEXT =
  'The repository is a TypeScript service. Keep the notes short: what the module does, what looks wrong.';
/** Task `n`'s goal: its file's part is its place in a batch of 10 (the match of its children entry). */
const goalOf = (n) => `Review src/module-${n}.ts and write your notes to notes-part-${n % 10}.md`;
// In the workspace's root: parallel writes into a directory none has created yet may be refused (see
// BENCHMARKS.md), which is not what this bench measures.
const fileOf = (k) => `notes-part-${k}.md`;
/** The children scripts, one per part: the file, then the summary a child is asked for. */
const CHILD_SCRIPTS = Array.from({ length: 10 }, (_, k) => ({
  match: fileOf(k),
  script: [
    {
      toolCalls: [
        {
          name: 'write_file',
          arguments: {
            path: fileOf(k),
            content: `# Notes, part ${k}\n\n- Reads its options once and validates them.\n- Nothing looks wrong.\n`,
          },
        },
      ],
    },
    {
      content: `Reviewed the module and wrote ${fileOf(k)}. Found: it reads its options once and validates them. Files changed: ${fileOf(k)}. Problems: none.`,
    },
  ],
}));

/** The parent: `CHILDREN / perCall` delegate_parallel calls of `perCall` tasks, then its answer. */
function parentBody(perCall) {
  const script = [];
  for (let first = 0; first < CHILDREN; first += perCall) {
    const tasks = Array.from({ length: perCall }, (_, i) => ({ goal: goalOf(first + i), context: CONTEXT }));
    script.push({ toolCalls: [{ name: 'delegate_parallel', arguments: { tasks } }] });
  }
  script.push({ content: `All ${CHILDREN} modules reviewed; the notes are in notes-part-*.md.` });
  return {
    input: `Review the ${CHILDREN} modules of src/ and collect notes on each.`,
    toolsets: ['base', 'planning', 'crew'],
    model: { provider: 'replay', script, children: CHILD_SCRIPTS },
  };
}

/** Standalone run `n`: the script its child plays, with a child's toolsets. */
function standaloneBody(n) {
  return {
    input: `${goalOf(n)}\n\n${CONTEXT}`,
    toolsets: ['base', 'planning'],
    model: { provider: 'replay', script: CHILD_SCRIPTS[n % 10].script },
  };
}

const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const msOf = (eventId) => Number(eventId.split('-')[0]);
const round1 = (value) => Number(value.toFixed(1));
const round3 = (value) => Number(value.toFixed(3));

class CheckFailed extends Error {}
function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

/** A deployment of its own: Redis, the 2 workers, a RunService on their keys. */
async function deploy(variant) {
  const redisServer = await benchRedis();
  const workspaces = await tempDir(`crew-${variant.name}`);
  const keys = createKeys(`{bench-crew-${process.pid}}`);
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  const stack = await startStack({
    redis: redisServer.url,
    apis: 0,
    workers: Array.from({ length: WORKERS }, (_, i) => `bench-crew-w${i + 1}`),
    workerNodeFlags: WORKER_FLAGS,
    env: {
      TETHER_QUEUE_PREFIX: keys.queuePrefix,
      TETHER_QUEUE_SHARDS: String(keys.shards),
      TETHER_WORKSPACE_ROOT: workspaces.dir,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_WORKER_CONCURRENCY: String(CONCURRENCY),
      TETHER_SANDBOX: 'none',
      TETHER_CREW_MAX_CHILDREN: String(CHILDREN),
      TETHER_CREW_MAX_PARALLEL: String(variant.maxParallel),
      LOG_LEVEL: 'warn',
    },
    listedWorkers: listedIn(redis, keys),
    maxOutputChars: 20_000,
  });
  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  const pids = {
    workers: stack.workers.map((worker) => worker.child.pid),
    redis: [redisPid],
    bench: [process.pid],
  };
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
  return {
    keys,
    store,
    service,
    workspaces,
    pids,
    async stop() {
      stopping = true;
      await stack.stop();
      await service.close();
      redis.disconnect();
      await redisServer.stop();
      await workspaces.remove();
    },
  };
}

/** Every event of a run, page by page. */
async function allEvents(store, runId) {
  const events = [];
  for (let after = '0'; ; ) {
    const page = await store.readEvents(runId, after, 1_000);
    events.push(...page);
    if (page.length < 1_000) return events;
    after = page.at(-1).id;
  }
}

function cpuSnapshot(pids) {
  return Object.fromEntries(
    Object.entries(pids).map(([name, list]) => [name, list.reduce((sum, pid) => sum + cpuMicros(pid), 0)]),
  );
}

/**
 * Runs `start` (which submits the pass's runs) while sampling the deployment's jobs every SAMPLE_MS;
 * resolves once nothing is waiting, active, delayed or prioritized, with the most active jobs seen
 * and the CPU µs per child of each process.
 */
async function pass(d, start) {
  let maxActive = 0;
  let samples = 0;
  let submitted = false;
  const before = cpuSnapshot(d.pids);
  const sampling = (async () => {
    for (;;) {
      const counts = await d.service.jobCounts('active', 'wait', 'delayed', 'prioritized');
      samples++;
      maxActive = Math.max(maxActive, counts.active ?? 0);
      if (submitted && Object.values(counts).every((n) => n === 0)) return;
      await settle(SAMPLE_MS);
    }
  })();
  const result = await start();
  submitted = true;
  await sampling;
  const after = cpuSnapshot(d.pids);
  const cpu = Object.fromEntries(
    Object.keys(after).map((name) => [name, (after[name] - before[name]) / CHILDREN]),
  );
  return { ...result, maxActive, samples, cpu };
}

/** Checks a run's end: completed, and its write_file succeeded. */
async function checkRun(store, runId, what) {
  const events = await allEvents(store, runId);
  const completed = events.find((e) => e.type === 'run.completed');
  const record = await store.get(runId);
  check(
    record?.status === 'completed' && completed,
    `${what} ${runId} ended ${record?.status}, not completed`,
  );
  const wrote = events.find((e) => e.type === 'tool.result' && e.data.name === 'write_file');
  check(wrote?.data.ok === true, `${what} ${runId}: its write_file did not succeed: ${wrote?.data.content}`);
  return completed;
}

/** A crew pass: the parent and its children; ms per child from the parent's event log. */
async function crewPass(d, variant, label) {
  const { parentId, ...measured } = await pass(d, async () => {
    const { run } = await d.service.submit(TENANT, parentBody(variant.perCall));
    return { parentId: run.id };
  });
  const where = `${variant.name}, ${label}: `;
  const parent = await d.store.get(parentId);
  check(
    parent?.status === 'completed',
    `${where}the parent ${parentId} ended ${parent?.status}, not completed`,
  );
  const events = await allEvents(d.store, parentId);
  const started = events.filter((e) => e.type === 'child.started');
  const finished = events.filter((e) => e.type === 'child.finished');
  check(
    started.length === CHILDREN && finished.length === CHILDREN,
    `${where}the parent's log has ${started.length} child.started and ${finished.length} child.finished, not ${CHILDREN} each`,
  );
  const results = events.filter((e) => e.type === 'tool.result' && e.data.name === 'delegate_parallel');
  const calls = CHILDREN / variant.perCall;
  check(results.length === calls, `${where}${results.length} delegate_parallel results, not ${calls}`);
  const entries = [];
  for (const [call, result] of results.entries()) {
    check(result.data.ok, `${where}delegate_parallel call ${call} was refused: ${result.data.content}`);
    const list = JSON.parse(result.data.content);
    check(
      list.length === variant.perCall && list.every((entry, i) => entry.index === i),
      `${where}delegate_parallel call ${call} lists ${list.length} entries (indexes ${list.map((e) => e.index).join(',')}), not ${variant.perCall} in order`,
    );
    entries.push(...list);
  }
  const notCompleted = entries.filter((entry) => entry.status !== 'completed');
  check(
    notCompleted.length === 0,
    `${where}${notCompleted.length} entries are not completed: ${notCompleted.map((e) => `${e.index} ${e.status} ${e.summary}`).join('; ')}`,
  );
  const childIds = await d.store.childIds(parentId);
  check(
    entries.length === CHILDREN && entries.every((entry, i) => entry.runId === childIds[i]),
    `${where}the results list ${entries.length} children, not the parent's ${childIds.length} in order`,
  );
  for (const childId of childIds) await checkRun(d.store, childId, `${where}child`);
  // Children write in their parent's workspace.
  for (let k = 0; k < Math.min(10, CHILDREN); k++) {
    await access(join(d.workspaces.dir, parentId, fileOf(k))).catch(() => {
      throw new CheckFailed(`${where}${fileOf(k)} is not in the parent's workspace`);
    });
  }
  const windowMs = msOf(finished.at(-1).id) - msOf(started[0].id);
  // Between two calls no child runs: from the last report of a call to the next call's first child.
  const gaps = [];
  for (let first = variant.perCall; first < CHILDREN; first += variant.perCall) {
    gaps.push(msOf(started[first].id) - msOf(finished[first - 1].id));
  }
  const gapsMs = gaps.reduce((sum, gap) => sum + gap, 0);
  return {
    msPerChild: windowMs / CHILDREN,
    gaps,
    gapsShare: gapsMs / windowMs,
    entries: entries.length,
    ...measured,
  };
}

/** A standalone pass: the 100 runs submitted at once; ms per run from the first submit to the last end. */
async function standalonePass(d, variant, label) {
  const { ids, firstSubmitMs, ...measured } = await pass(d, async () => {
    const firstSubmitMs = Date.now();
    const runs = await Promise.all(
      Array.from({ length: CHILDREN }, (_, n) => d.service.submit(TENANT, standaloneBody(n))),
    );
    return { ids: runs.map(({ run }) => run.id), firstSubmitMs };
  });
  let lastMs = 0;
  for (const id of ids) {
    const completed = await checkRun(d.store, id, `${variant.name}, ${label}: standalone run`);
    lastMs = Math.max(lastMs, msOf(completed.id));
  }
  return { msPerChild: (lastMs - firstSubmitMs) / CHILDREN, ...measured };
}

/** A variant: its deployment, a warm-up round, then ROUNDS rounds of a crew pass and a standalone pass. */
async function measure(variant) {
  const d = await deploy(variant);
  try {
    await crewPass(d, variant, 'warm-up');
    await standalonePass(d, variant, 'warm-up');
    const rounds = { crew: [], standalone: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      // Each kind goes first every other round, so neither gains from going second.
      const order = round % 2 ? ['crew', 'standalone'] : ['standalone', 'crew'];
      for (const kind of order) {
        await settle(200);
        const label = `round ${round}`;
        const figures =
          kind === 'crew' ? await crewPass(d, variant, label) : await standalonePass(d, variant, label);
        check(
          figures.maxActive <= SLOTS,
          `${variant.name}, ${label}, ${kind}: ${figures.maxActive} jobs active at once, over the workers' ${SLOTS} slots`,
        );
        rounds[kind].push(figures);
      }
    }
    const crew = median(rounds.crew.map((r) => r.msPerChild));
    const standalone = median(rounds.standalone.map((r) => r.msPerChild));
    const cpu = (kind) =>
      Object.fromEntries(
        Object.keys(d.pids).map((name) => [name, Math.round(median(rounds[kind].map((r) => r.cpu[name])))]),
      );
    const ratio = crew / standalone;
    const maxActive = (kind) => Math.max(...rounds[kind].map((r) => r.maxActive));
    console.log(
      JSON.stringify({
        bench: 'crew',
        variant: variant.name,
        children: CHILDREN,
        delegate_parallel_calls: CHILDREN / variant.perCall,
        tasks_per_call: variant.perCall,
        workers: WORKERS,
        concurrency_per_worker: CONCURRENCY,
        rounds: ROUNDS,
        crew_ms_per_child_each_round: rounds.crew.map((r) => round3(r.msPerChild)),
        standalone_ms_per_child_each_round: rounds.standalone.map((r) => round3(r.msPerChild)),
        crew_ms_per_child: round3(crew),
        standalone_ms_per_child: round3(standalone),
        ratio: round3(ratio),
        goal_ratio: GOAL_RATIO,
        // Median CPU µs per child (per run, standalone) of the workers together, Redis and this process.
        cpu_us_per_child: { crew: cpu('crew'), standalone: cpu('standalone') },
        parent_result_entries: rounds.crew[0].entries,
        // The time between one call's last report and the next call's first child (the parent's
        // wake, claim, turn and delegation), median of every gap of every round, and their share of
        // the crew's window (median of the rounds).
        ...(variant.perCall < CHILDREN
          ? {
              crew_ms_between_calls: round1(median(rounds.crew.flatMap((r) => r.gaps))),
              crew_share_between_calls: round3(median(rounds.crew.map((r) => r.gapsShare))),
            }
          : {}),
        max_active_jobs: { crew: maxActive('crew'), standalone: maxActive('standalone') },
        slots: SLOTS,
        active_samples_per_pass: round1(median([...rounds.crew, ...rounds.standalone].map((r) => r.samples))),
        pass: ratio <= GOAL_RATIO,
      }),
    );
  } finally {
    await d.stop();
  }
}

try {
  for (const variant of VARIANTS) await measure(variant);
} catch (error) {
  if (!(error instanceof CheckFailed)) throw error;
  console.error(`bench:crew failed a check: ${error.message}`);
  process.exitCode = 1;
}
