// pnpm bench:sandbox — the added cost per bash command of Tether's sandbox (bwrap in a user namespace,
// a cgroup with its limits, the launcher and its watchdog, the process-tree kill) over a bare
// `bash -c true`. One JSON line per variant: the median, p90 and mean of BENCH_RUNS sequential
// commands, in ms, and the median added over bare bash. Needs `pnpm build`; run as root to include
// the uid drop and the cgroups (CI's case). Target: added median <= 15 ms for bwrap + cgroup.
//
// Two rhythms. Back to back, each call starts the moment the previous one returned: the sandbox that
// bash prepares after a command for the next one is still being built, so each call waits for most
// of a sandbox's start. One model turn apart (BENCH_PAUSE_MS, default 100 ms, not timed), as in an
// agent run, where every bash call follows a model turn: the prepared sandbox is ready and the call
// only sends its command. Bare bash is measured in both rhythms, and each variant is compared with
// the bare bash of its own rhythm.
//
// Each line also gives the p99 of the event loop's delay while it ran (loopDelayP99Ms): how long
// every other run of the worker waited. BENCH_SPAWNER=worker makes the worker spawn each launcher
// itself (a host without perl) instead of its command spawner (see command-spawner.ts).
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { spawnerAvailable, useCommandSpawner } from '../packages/tools/dist/command-spawner.js';
import { cgroupSupport, createTools, probeBwrap } from '../packages/tools/dist/index.js';
import { buildBwrapArgs, sandboxUserFor } from '../packages/tools/dist/sandbox.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 60);
// BENCH_SPAWNER=worker: the worker spawns each launcher itself (as on a host without perl).
if (process.env.BENCH_SPAWNER === 'worker') useCommandSpawner(false);
const WARMUP = 5;
const PAUSE_MS = Number(process.env.BENCH_PAUSE_MS ?? 100);

function stats(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { medianMs: round(median), p90Ms: round(at(0.9)), meanMs: round(mean) };
}

const round = (ms) => Number(ms.toFixed(2));

async function measure(fn, pauseMs = 0) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const times = [];
  // How long the event loop stalled meanwhile: what every other run of a worker waits for.
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  for (let i = 0; i < RUNS; i++) {
    if (pauseMs > 0) await delay(pauseMs);
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  loop.disable();
  return { ...stats(times), loopDelayP99Ms: round(loop.percentile(99) / 1e6) };
}

function spawnWait(file, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited ${code}`))));
  });
}

const bareBash = () => spawnWait('/bin/bash', ['-c', 'true']);

const base = await mkdtemp(path.join(tmpdir(), 'tether-bench-sandbox-'));
await chmod(base, 0o755);
const workspace = path.join(base, 'run_bench');
await mkdir(workspace);
try {
  const probe = await probeBwrap();
  const cgroups = await cgroupSupport();
  const tool = (sandbox) =>
    createTools(
      {
        runId: 'run_bench',
        workspace,
        workspaceRoot: base,
        sandbox,
        emit: () => undefined,
        signal: new AbortController().signal,
        todos: { get: () => [], set: () => undefined },
      },
      ['bash'],
    )[0];
  const call = (bash) => async () => {
    const result = await bash.execute(
      { command: 'true' },
      { callId: 'c', signal: new AbortController().signal },
    );
    if (!result.ok) throw new Error(`bash failed: ${result.content}`);
  };

  const bare = await measure(bareBash);
  const context = {
    runs: RUNS,
    root: process.getuid?.() === 0,
    cgroups: cgroups.kind,
    userNamespace: probe.userNamespace,
    spawner: spawnerAvailable() ? 'perl' : 'worker',
  };
  const backToBack = { rhythm: 'back to back' };
  const paced = { rhythm: `${PAUSE_MS} ms apart` };
  console.log(
    JSON.stringify({ bench: 'sandbox', variant: 'bare bash -c true', ...bare, ...backToBack, ...context }),
  );
  const variants = [['none', 'tether none (launcher, watchdog, cgroup, kill)']];
  if (probe.ok) {
    // bubblewrap alone with the same options and user, no launcher, cgroup or kill: what the sandbox
    // itself costs on this machine, measured in the same run.
    const user = sandboxUserFor();
    const args = [
      ...buildBwrapArgs({ workspace, workspaceRoot: base, allowNetwork: false, tmpBytes: 256 * 1024 * 1024 }),
      '--',
      '/bin/bash',
      '-c',
      'true',
    ];
    const alone = await measure(() =>
      spawnWait(probe.path, args, user === undefined ? {} : { uid: user.uid, gid: user.gid }),
    );
    console.log(
      JSON.stringify({
        bench: 'sandbox',
        variant: 'bwrap alone (same options and user)',
        ...alone,
        addedMedianMs: round(alone.medianMs - bare.medianMs),
        ...backToBack,
        ...context,
      }),
    );
    variants.push(['bwrap', 'tether bwrap (+ user namespace, mounts, uid drop)']);
  } else console.error(`bwrap does not work here (${probe.detail}): only none is measured`);
  const tools = [];
  const report = (sandbox, variant, result, baseline, rhythm) =>
    console.log(
      JSON.stringify({
        bench: 'sandbox',
        variant,
        ...result,
        addedMedianMs: round(result.medianMs - baseline.medianMs),
        ...(sandbox === 'bwrap' ? { targetAddedMs: 15 } : {}),
        ...rhythm,
        ...context,
      }),
    );
  for (const [sandbox, variant] of variants) {
    const bash = tool(sandbox);
    tools.push(bash);
    report(sandbox, variant, await measure(call(bash)), bare, backToBack);
  }
  const barePaced = await measure(bareBash, PAUSE_MS);
  console.log(
    JSON.stringify({ bench: 'sandbox', variant: 'bare bash -c true', ...barePaced, ...paced, ...context }),
  );
  for (const [sandbox, variant] of variants) {
    const bash = tool(sandbox);
    tools.push(bash);
    report(sandbox, variant, await measure(call(bash), PAUSE_MS), barePaced, paced);
  }
  await Promise.all(tools.map((bash) => bash.close()));
} finally {
  await rm(base, { recursive: true, force: true });
}
