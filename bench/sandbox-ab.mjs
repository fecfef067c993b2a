// node bench/sandbox-ab.mjs <tools dist>… — builds of packages/tools (copies of a dist/ folder, each
// named after its folder, and this checkout's as "new") interleaved in one invocation, on a machine
// too busy for one build's figures to compare with another run's: blocks of BENCH_BLOCK calls of each
// variant in turn (bare bash, each build under bwrap and none), BENCH_BLOCKS times. Back to back within a block; the first call of a block is not counted (its sandbox was
// prepared during the other variants' blocks). BENCH_PAUSE_MS > 0: every call that far apart instead.
// One JSON line per variant: the median, p90 and mean in ms, and the median added over bare bash.
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

const baselines = process.argv.slice(2);
if (baselines.length === 0) throw new Error('usage: node bench/sandbox-ab.mjs <tools dist dir>…');
const BLOCK = Number(process.env.BENCH_BLOCK ?? 8);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 6);
const PAUSE_MS = Number(process.env.BENCH_PAUSE_MS ?? 0);
const MODES = (process.env.BENCH_MODES ?? 'bwrap,none').split(',');

const builds = {};
for (const dir of baselines) {
  const name = path
    .basename(dir)
    .replace(/^\./, '')
    .replace(/-dist$/, '');
  builds[name] = await import(pathToFileURL(path.resolve(dir, 'index.js')).href);
}
builds.new = await import('../packages/tools/dist/index.js');

function stats(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { medianMs: round(median), p90Ms: round(at(0.9)), meanMs: round(mean), n: times.length };
}
const round = (ms) => Number(ms.toFixed(2));

function bareBash() {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/bash', ['-c', 'true'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`bash exited ${code}`))));
  });
}

const base = await mkdtemp(path.join(tmpdir(), 'tether-bench-ab-'));
await chmod(base, 0o755);
const workspace = path.join(base, 'run_bench');
await mkdir(workspace);
const tools = [];
try {
  const variants = [['bare bash -c true', bareBash]];
  for (const mode of MODES) {
    for (const [name, build] of Object.entries(builds)) {
      const [bash] = build.createTools(
        {
          runId: 'run_bench',
          workspace,
          workspaceRoot: base,
          sandbox: mode,
          emit: () => undefined,
          signal: new AbortController().signal,
          todos: { get: () => [], set: () => undefined },
        },
        ['bash'],
      );
      tools.push(bash);
      const call = async () => {
        const result = await bash.execute(
          { command: 'true' },
          { callId: 'c', signal: new AbortController().signal },
        );
        if (!result.ok) throw new Error(`bash failed: ${result.content}`);
      };
      variants.push([`${name} ${mode}`, call]);
    }
  }
  const times = new Map(variants.map(([name]) => [name, []]));
  for (const [, fn] of variants) await fn(); // warm-up: probes, keepers, first sandboxes
  for (let block = 0; block < BLOCKS; block++) {
    for (const [name, fn] of variants) {
      for (let i = 0; i < BLOCK; i++) {
        if (PAUSE_MS > 0) await delay(PAUSE_MS);
        const start = performance.now();
        await fn();
        if (i > 0 || PAUSE_MS > 0) times.get(name).push(performance.now() - start);
      }
    }
  }
  const bare = stats(times.get('bare bash -c true'));
  const load = (await import('node:os')).loadavg().map((value) => round(value));
  for (const [name] of variants) {
    const result = stats(times.get(name));
    console.log(
      JSON.stringify({
        bench: 'sandbox-ab',
        variant: name,
        ...result,
        addedMedianMs: round(result.medianMs - bare.medianMs),
        rhythm: PAUSE_MS > 0 ? `${PAUSE_MS} ms apart` : 'back to back',
        load,
      }),
    );
  }
} finally {
  await Promise.all(tools.map((bash) => bash.close()));
  await rm(base, { recursive: true, force: true });
}
