// pnpm bench:guard — keeps the hot path's figures (issue 30): the CPU per trivial run of the API,
// the workers and Redis (bench:throughput, trivial runs only, read from /proc as it does), and the
// Redis bytes per suspended run, checkpoint included (bench:capacity, on 2,000 runs). Each figure is
// held to its budget plus 25%: one JSON line per figure, then the verdict; the exit code is 1 when
// a figure is over. Under a minute. Needs `pnpm build`; run it on a quiet machine before submitting a
// change to the hot path. Not part of `pnpm test`: timing does not belong in the suite.
import { spawn } from 'node:child_process';

/** The budgets (issue 30) and how far over them the guard lets a figure go. */
const BUDGETS = {
  api_cpu_us_per_trivial_run: 120,
  worker_cpu_us_per_trivial_run: 140,
  redis_cpu_us_per_trivial_run: 160,
  redis_bytes_per_suspended_run: 3_000,
};
const SLACK = 1.25;

/** Runs a bench script in its own process and returns its JSON lines. */
function bench(script, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [new URL(script, import.meta.url).pathname], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`${script} exited with ${code}`));
      else
        resolve(
          out
            .split('\n')
            .filter((line) => line.startsWith('{'))
            .map((line) => JSON.parse(line)),
        );
    });
  });
}

const started = Date.now();
const [throughput] = await bench('./throughput.bench.mjs', {
  BENCH_KINDS: 'none',
  BENCH_RUNS: '3000',
  BENCH_JOBS: '5000',
  BENCH_PASSES: '5',
});
// The worker's RSS is not a figure here: one 5 s look at it instead of a minute's settling.
const [capacity] = await bench('./suspended-capacity.bench.mjs', {
  BENCH_RUNS: '2000',
  BENCH_SETTLE_MS: '5000',
});
if (!throughput?.cpu_us_per_run || capacity?.redis_bytes_per_run_excluding_checkpoint === undefined) {
  throw new Error('bench:guard: a bench printed no figures');
}
const figures = {
  api_cpu_us_per_trivial_run: throughput.cpu_us_per_run.api,
  worker_cpu_us_per_trivial_run: throughput.cpu_us_per_run.workers,
  redis_cpu_us_per_trivial_run: throughput.cpu_us_per_run.redis,
  redis_bytes_per_suspended_run:
    capacity.redis_bytes_per_run_excluding_checkpoint + capacity.checkpoint_bytes_per_run,
};
let pass = true;
for (const [figure, value] of Object.entries(figures)) {
  const budget = BUDGETS[figure];
  const limit = Math.round(budget * SLACK);
  const ok = typeof value === 'number' && value <= limit;
  pass &&= ok;
  console.log(JSON.stringify({ guard: 'bench-guard', figure, value, budget, limit, pass: ok }));
}
console.log(
  JSON.stringify({ guard: 'bench-guard', pass, seconds: Math.round((Date.now() - started) / 1000) }),
);
process.exitCode = pass ? 0 : 1;
