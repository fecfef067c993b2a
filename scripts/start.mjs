#!/usr/bin/env node
// pnpm start [--workers N] [--port P] [--redis-port R]: the local stack in one terminal, for
// development. Stops what a pnpm start killed with -9 left running, checks its ports, builds if
// needed, finds or starts Redis, runs the API and N workers with development settings (a secrets
// key of its own, webhooks to local receivers: start/dev-settings.mjs) and quiet, readable logs,
// restarts a crashed worker with backoff, writes .tether/stack.json while it runs, and stops
// everything (its own redis-server included) on Ctrl-C, exiting 0.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { developmentSettings } from './start/dev-settings.mjs';
import { isStale, killCommand, leftovers, processList, stopLeftovers } from './start/leftovers.mjs';
import { createPrinter } from './start/log-lines.mjs';
import { parseArgs, UsageError, usage } from './start/options.mjs';
import { apiHosts, portInUse } from './start/ports.mjs';
import { RestartBackoff } from './start/restarts.mjs';
import {
  removeStackFile,
  stackFilePath,
  stackHome,
  startTimes,
  withoutCredentials,
  writeStackFile,
} from './start/stack-file.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOME = stackHome(ROOT, process.env);
const STACK_FILE = stackFilePath(HOME);
const USE_COLOR = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code, text) => (USE_COLOR ? `\x1b[${code}m${text}\x1b[0m` : text);
const STOP_TIMEOUT_MS = 15_000;
/** After Ctrl-C, how long the stack stops in silence before saying what it waits for. */
const SLOW_STOP_MS = 3_000;
const READY_TIMEOUT_MS = 30_000;
const startedAt = Date.now();

function fail(message, exitCode = 2) {
  console.error(`${paint(31, 'tether start:')} ${message}`);
  process.exit(exitCode);
}

/** The newest modification time under `dir` (0 when it does not exist). */
function newest(dir) {
  if (!existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

function needsBuild() {
  for (const group of ['apps', 'packages']) {
    for (const name of readdirSync(join(ROOT, group))) {
      const dir = join(ROOT, group, name);
      if (!existsSync(join(dir, 'src'))) continue;
      const built = newest(join(dir, 'dist'));
      if (built === 0 || newest(join(dir, 'src')) > built) return true;
    }
  }
  return false;
}

const COLORS = { redis: 35, api: 32 };
const tag = (name) => paint(COLORS[name] ?? 34, name.padEnd(9));
// Errors' stacks in the terminal when the processes log at debug or trace too.
const printer = createPrinter({
  tag,
  paint,
  stacks: ['debug', 'trace'].includes(process.env.LOG_LEVEL?.trim().toLowerCase() ?? ''),
});

/** The stack while it starts, and once it runs; each of its processes is in a process group of its own. */
let startup;
let stack;
let stopping = false;
let wroteStackFile = false;
const starting = new AbortController();
/** Each worker by id: its current process (a restarted one replaces the one that crashed), its backoff. */
const workers = new Map();

async function stopAll(exitCode) {
  if (stopping) return;
  stopping = true;
  // One line: from now on the processes' own lines are printed only if they warn or fail.
  printer.stopping();
  console.log(paint(2, 'stopping…'));
  for (const worker of workers.values()) clearTimeout(worker.restart);
  const slow = setTimeout(() => {
    const waiting = processes().filter(({ child }) => child.exitCode === null && child.signalCode === null);
    if (waiting.length === 0) return;
    const names = waiting.map(({ name }) => name).join(', ');
    console.log(paint(2, `still stopping: ${names} (each is killed after ${seconds(STOP_TIMEOUT_MS)})`));
  }, SLOW_STOP_MS);
  // A stack still starting stops what it started (and rejects) once aborted.
  starting.abort();
  const started = stack ?? (await startup?.catch(() => undefined));
  if (started !== undefined) {
    // Services first (they drain), then our own Redis.
    const services = [...started.apis, ...[...workers.values()].map((worker) => worker.process)];
    await Promise.all(
      services.map(async (spawned) => {
        const { signal } = await spawned.stop('SIGTERM', STOP_TIMEOUT_MS);
        if (signal === 'SIGKILL') console.error(paint(33, `${spawned.name} did not stop in time: killed`));
      }),
    );
    await started.redis?.stop();
  }
  clearTimeout(slow);
  process.exit(exitCode);
}

/** The stack's processes, its own Redis included, with a name each. */
function processes() {
  if (stack === undefined) return [];
  const own = stack.redis ? [{ name: 'redis', child: stack.redis.child }] : [];
  const services = [...stack.apis, ...[...workers.values()].map((worker) => worker.process)];
  return [...services.map(({ name, child }) => ({ name, child })), ...own];
}

let options;
try {
  options = parseArgs(process.argv.slice(2), process.env);
} catch (error) {
  if (error instanceof UsageError) fail(error.message);
  throw error;
}
if (options.help) {
  console.log(usage(HOME));
  process.exit(0);
}
// A cluster's processes find it through REDIS_CLUSTER_NODES (passed through); the stack checks its first seed.
const cluster = process.env.REDIS_CLUSTER_NODES?.trim() || undefined;
const seed = cluster?.split(',')[0]?.trim();
const password = process.env.REDIS_PASSWORD ? `:${encodeURIComponent(process.env.REDIS_PASSWORD)}@` : '';
const given = seed ? `redis://${password}${seed}` : process.env.REDIS_URL;
if (given && options.redisPortGiven) {
  fail(
    `--redis-port is the port of the stack's own redis-server, but ${seed ? 'REDIS_CLUSTER_NODES' : 'REDIS_URL'} gives a Redis: leave out one or the other`,
  );
}
await stopWhatWasLeft();
await checkPorts();

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void stopAll(0));
// Whatever way this script ends, nothing it started outlives it, and its stack file goes.
process.on('exit', () => {
  for (const { child } of processes())
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (wroteStackFile) removeStackFile(STACK_FILE);
});

if (needsBuild()) {
  console.log(paint(2, 'building (pnpm build)…'));
  const built = spawnSync('pnpm', ['build'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) fail('the build failed (see above)');
}
// Only now: the build makes them.
const { findOnPath, spawnNode, startStack, waitForPing, WORKER_MAIN, WORKER_NODE_FLAGS } = await import(
  '@tether/testing/scripts'
);
const { DEFAULT_MODELS, describeProfile, profilesFromEnv } = await import('@tether/agent/spec');
// The CLI's own reader of the file: a stack file whose pnpm start still runs.
const { readStackFile } = await import('../packages/client/dist/cli/base-url.js');

const other = readStackFile(STACK_FILE);
if (other !== undefined) {
  fail(
    `another pnpm start (pid ${other.pid}, API ${other.apiUrl}) runs with ${HOME}: stop it, or give this one a directory of its own with TETHER_HOME=…`,
    1,
  );
}
mkdirSync(join(HOME, 'workspaces'), { recursive: true });
if (given) {
  const name = seed ? `REDIS_CLUSTER_NODES: ${seed}` : `REDIS_URL=${given}`;
  await waitForPing(given, 1_000).catch(() => fail(`${name} does not answer PING`));
} else if (findOnPath('redis-server')) {
  mkdirSync(join(HOME, 'redis'), { recursive: true });
} else {
  fail(`no Redis. Either install one so redis-server is on PATH
  (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis),
or start one with Docker: docker compose up -d redis, then REDIS_URL=redis://127.0.0.1:6379 pnpm start`);
}

let development;
try {
  development = developmentSettings(HOME, process.env, paint);
} catch (error) {
  fail(error.message);
}
const env = {
  TETHER_WORKSPACE_ROOT: process.env.TETHER_WORKSPACE_ROOT ?? join(HOME, 'workspaces'),
  ...development.vars,
};
const onLine = (name, line) => printer.print(name, line);
// Up means the API is ready and every worker has said so (each lists itself in /readyz once ready).
startup = startStack({
  redis: given ?? {
    dir: join(HOME, 'redis'),
    port: options.redisPort,
    appendfsync: 'everysec',
    // Its warnings and errors only; start/log-lines.mjs leaves out those of its start and stop.
    logLevel: 'warning',
  },
  apis: 1,
  workers: options.workers,
  port: options.port,
  inheritEnv: true,
  env,
  cwd: ROOT,
  detached: true,
  onLine,
  maxOutputChars: 16_000,
  readyTimeoutMs: READY_TIMEOUT_MS,
  stopTimeoutMs: STOP_TIMEOUT_MS,
  signal: starting.signal,
});
try {
  stack = await startup;
} catch (error) {
  // Stopping on a signal: stopAll ends the process once the stack has stopped what it started.
  if (!stopping) {
    // The processes' output is on the screen already: the first line says what failed.
    console.error(paint(31, String(error.message ?? error).split('\n')[0]));
    process.exit(1);
  }
}

if (stack !== undefined && !stopping) {
  for (const worker of stack.workers) {
    workers.set(worker.name, { process: worker, startedAt: Date.now(), backoff: new RestartBackoff() });
    superviseWorker(worker.name);
  }
  // The API or Redis gone, nothing works: the stack stops, saying which.
  const vital = [...stack.apis.map(({ name, child }) => ({ name, child }))];
  if (stack.redis) vital.push({ name: 'redis', child: stack.redis.child });
  for (const { name, child } of vital) {
    child.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(paint(31, `${name} exited (${exitReason(code, signal)}); stopping the stack`));
      void stopAll(1);
    });
  }
  updateStackFile();
  const base = stack.urls[0];
  // The development settings above the banner's last line (try…, stop: Ctrl-C).
  const model = modelBanner();
  const banner = [...model.slice(0, -1), ...development.banner, ...model.slice(-1)];
  console.log(
    `\n${paint(1, 'Tether is up')} at ${base}  (console: ${base}/console/, API docs: ${base}/docs, ${options.workers} worker${options.workers > 1 ? 's' : ''}, Redis ${cluster ? `Cluster ${cluster}` : stack.redisUrl})\n` +
      `${banner.join('\n')}\n` +
      paint(2, `  stack file: ${STACK_FILE} (pnpm demo and pnpm tether find the API there)\n`),
  );
}

/**
 * A pnpm start killed with -9 leaves its processes running, each in a process group of its own,
 * holding its ports and its Redis data: those its stack file names (and that are still the same
 * processes) are stopped, in one line. One that cannot be stopped (another user's) is named with
 * the command that stops it, and this start exits 1.
 */
async function stopWhatWasLeft() {
  if (!isStale(STACK_FILE)) return;
  const left = leftovers(STACK_FILE);
  const known = left.filter(({ startTime }) => startTime !== undefined);
  if (known.length > 0) {
    const { stopped, refused, running } = await stopLeftovers(known, { timeoutMs: STOP_TIMEOUT_MS });
    if (stopped.length > 0) {
      console.log(paint(2, `stopped what a pnpm start killed earlier left running: ${processList(stopped)}`));
    }
    if (refused.length > 0 || running.length > 0) {
      const still = [...refused, ...running];
      fail(
        `a pnpm start that was killed left ${processList(still)} running, and they could not be stopped: ` +
          `stop them with ${refused.length > 0 ? 'sudo ' : ''}${killCommand(still)}, then start again`,
        1,
      );
    }
  }
  // Processes of an older start's file (no start times) stay named in it, for checkPorts.
  if (known.length === left.length) removeStackFile(STACK_FILE);
}

/** Says nothing when the port is free; else names it, the flag that changes it, and exits 1. */
async function checkPorts() {
  const busy = async (port, hosts) => {
    for (const host of hosts)
      if (await portInUse(port, host).catch((error) => fail(error.message, 1))) return true;
    return false;
  };
  // What stopWhatWasLeft could not tell apart from other processes (an older pnpm start's file).
  const left = leftovers(STACK_FILE);
  const hint =
    left.length > 0
      ? `. A pnpm start that was killed may have left processes running: ${processList(left)} (if they are, ${killCommand(left)})`
      : '';
  if (await busy(options.port, apiHosts(process.env))) {
    const tether = await fetch(`http://127.0.0.1:${options.port}/readyz`, {
      signal: AbortSignal.timeout(3_000),
    })
      .then((response) => response.headers.get('content-type')?.includes('json') === true)
      .catch(() => false);
    fail(
      `port ${options.port} is in use${tether ? ' (a Tether API answers there: another pnpm start?)' : ''}, so the API cannot listen on it. ` +
        `Stop what holds it, or choose another port with --port, e.g. pnpm start --port ${options.port + 1}${hint}`,
      1,
    );
  }
  if (!given && (await busy(options.redisPort, ['127.0.0.1']))) {
    fail(
      `port ${options.redisPort} is in use (another pnpm start's Redis?), so the stack's redis-server cannot listen on it. ` +
        `Stop what holds it, or choose another port with --redis-port, e.g. pnpm start --redis-port ${options.redisPort + 1} ` +
        `(or give a running Redis with REDIS_URL)${hint}`,
      1,
    );
  }
}

/** Restarts the worker `id` whenever it exits while the stack runs, with backoff, and logs each crash. */
function superviseWorker(id) {
  const worker = workers.get(id);
  const spawned = worker.process;
  spawned.exited.then(({ code, signal }) => {
    if (stopping || worker.process !== spawned) return;
    const upMs = Date.now() - worker.startedAt;
    const delayMs = worker.backoff.crashed(upMs);
    console.error(
      `${tag(id)} ${paint(31, 'CRASH')} ${id} crashed (${exitReason(code, signal)}) after ${seconds(upMs)}; ` +
        `restarting in ${seconds(delayMs)} (crash ${worker.backoff.crashes} in a row)`,
    );
    worker.restart = setTimeout(() => void restartWorker(id), delayMs);
  });
}

/** Starts the worker `id` again, as startStack started it; one that is not ready in time is killed (a crash). */
async function restartWorker(id) {
  if (stopping) return;
  const worker = workers.get(id);
  worker.process = spawnNode(WORKER_MAIN, { ...env, REDIS_URL: stack.redisUrl, TETHER_WORKER_ID: id }, [], {
    name: id,
    nodeFlags: WORKER_NODE_FLAGS,
    inheritEnv: true,
    detached: true,
    cwd: ROOT,
    onLine: (line) => onLine(id, line),
    maxOutputChars: 16_000,
    killAfterMs: STOP_TIMEOUT_MS,
  });
  worker.startedAt = Date.now();
  superviseWorker(id);
  try {
    await worker.process.waitFor(/"msg":"worker ready"/, READY_TIMEOUT_MS);
  } catch {
    // It exited (supervised above), or hangs: killed, it counts as a crash.
    await worker.process.stop('SIGKILL');
    return;
  }
  if (stopping) return;
  // The file first: whoever reads the line finds the new pid there.
  updateStackFile();
  console.log(`${tag(id)} ${paint(32, 'BACK ')} ${id} restarted (pid ${worker.process.child.pid})`);
}

/** Writes .tether/stack.json with the stack's addresses and its processes' pids as they are now. */
function updateStackFile() {
  const base = stack.urls[0];
  const pids = {
    start: process.pid,
    api: stack.apis[0]?.child.pid,
    redis: stack.redis?.child.pid,
    workers: Object.fromEntries([...workers].map(([id, worker]) => [id, worker.process.child.pid])),
  };
  writeStackFile(STACK_FILE, {
    version: 1,
    pid: process.pid,
    startedAt: new Date(startedAt).toISOString(),
    apiUrl: base,
    consoleUrl: `${base}/console/`,
    redisUrl: cluster ? undefined : withoutCredentials(stack.redisUrl),
    redisClusterNodes: cluster,
    pids,
    startTimes: startTimes([pids.start, pids.api, pids.redis, ...Object.values(pids.workers)]),
  });
  wroteStackFile = true;
}

function exitReason(code, signal) {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

function seconds(ms) {
  return ms < 10_000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms / 1000)} s`;
}

/**
 * The banner's lines on the model: the profile runs get by default (read from
 * this environment, which the API and workers share), or, with none, how to
 * configure one. Never a key.
 */
function modelBanner() {
  const env = process.env;
  const { profiles, defaultProfile } = profilesFromEnv(env);
  const active = profiles.find((profile) => profile.name === defaultProfile);
  if (active === undefined) {
    return [
      `  ${paint(33, 'No model is configured')}: pnpm demo plays a scripted one. For a real model, stop (Ctrl-C) and start again with one of:`,
      `    ${paint(1, 'OPENAI_API_KEY=sk-… pnpm start')}                          OpenAI (${DEFAULT_MODELS.openai})`,
      `    ${paint(1, 'OPENAI_BASE_URL=http://localhost:11434/v1 pnpm start')}   Ollama, vLLM, DeepSeek, Qwen…: any OpenAI-compatible server`,
      `    ${paint(1, 'ANTHROPIC_API_KEY=sk-ant-… pnpm start')}                  Anthropic (${DEFAULT_MODELS.anthropic})`,
      '  TETHER_MODEL picks another model; docs/agent.md has a recipe per provider.',
      `  try: ${paint(1, 'pnpm demo')}   stop: Ctrl-C`,
    ];
  }
  const others = profiles.filter((profile) => profile !== active).map((profile) => profile.name);
  const lines = [
    `  model: ${describeProfile(active)}${others.length > 0 ? ` (other profiles: ${others.join(', ')})` : ''}`,
  ];
  const set = (name) => (env[name] ?? '').trim() !== '';
  if (set('OPENAI_API_KEY') && set('ANTHROPIC_API_KEY') && !set('TETHER_MODEL_PROVIDER')) {
    lines.push(
      paint(2, '  ANTHROPIC_API_KEY is set too: TETHER_MODEL_PROVIDER=anthropic chooses Anthropic instead'),
    );
  }
  lines.push(
    `  try: ${paint(1, 'pnpm demo')}   or: ${paint(1, `pnpm tether run "list the files"`)}   stop: Ctrl-C`,
  );
  return lines;
}
