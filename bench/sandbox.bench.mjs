// pnpm bench:sandbox — the added cost per bash command of Tether's sandbox (bwrap in a user namespace,
// a cgroup with its limits, the launcher and its watchdog, the process-tree kill) over a bare
// `bash -c true`. One JSON line per variant: the median, p90 and mean of BENCH_RUNS sequential
// commands, in ms, and the median added over bare bash. Needs `pnpm build`; run as root to include
// the uid drop and the cgroups (CI's case). Target: added median <= 15 ms for bwrap + cgroup.
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cgroupSupport, createTools, probeBwrap } from '../packages/tools/dist/index.js';
import { buildBwrapArgs, sandboxUserFor } from '../packages/tools/dist/sandbox.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 60);
const WARMUP = 5;

function stats(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { medianMs: round(median), p90Ms: round(at(0.9)), meanMs: round(mean) };
}

const round = (ms) => Number(ms.toFixed(2));

async function measure(fn) {
  for (let i = 0; i < WARMUP; i++) await fn();
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return stats(times);
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
  };
  console.log(JSON.stringify({ bench: 'sandbox', variant: 'bare bash -c true', ...bare, ...context }));
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
        ...context,
      }),
    );
    variants.push(['bwrap', 'tether bwrap (+ user namespace, mounts, uid drop)']);
  } else console.error(`bwrap does not work here (${probe.detail}): only none is measured`);
  for (const [sandbox, variant] of variants) {
    const result = await measure(call(tool(sandbox)));
    console.log(
      JSON.stringify({
        bench: 'sandbox',
        variant,
        ...result,
        addedMedianMs: round(result.medianMs - bare.medianMs),
        ...(sandbox === 'bwrap' ? { targetAddedMs: 15 } : {}),
        ...context,
      }),
    );
  }
} finally {
  await rm(base, { recursive: true, force: true });
}
