#!/usr/bin/env node
// pnpm start [--workers N] [--port P]: the local stack in one terminal.
// Builds if needed, finds or starts Redis, runs the API and N workers with readable logs,
// and stops everything (its own redis-server included) on Ctrl-C.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOME = resolve(ROOT, process.env.TETHER_HOME ?? '.tether');
const USE_COLOR = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code, text) => (USE_COLOR ? `\x1b[${code}m${text}\x1b[0m` : text);

function usage(exitCode) {
  console.log(`Usage: pnpm start [--workers N] [--port P]

Runs the Tether API (http://127.0.0.1:P, default 3000) and N workers (default 1).
Redis: REDIS_CLUSTER_NODES (a Redis Cluster's seed nodes) or REDIS_URL if set;
else a local redis-server with its data under ${HOME}/redis.
Environment is passed through: the model comes from OPENAI_API_KEY (OPENAI_BASE_URL for
another OpenAI-compatible server) or ANTHROPIC_API_KEY, TETHER_MODEL picks the model (docs/agent.md).`);
  process.exit(exitCode);
}

function parseArgs(argv) {
  const options = { workers: 1, port: Number(process.env.PORT ?? 3000) };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) fail(`${arg} needs a value`);
      return next;
    };
    if (arg === '--help' || arg === '-h') usage(0);
    else if (arg === '--workers') options.workers = Number(value());
    else if (arg.startsWith('--workers=')) options.workers = Number(arg.slice(10));
    else if (arg === '--port') options.port = Number(value());
    else if (arg.startsWith('--port=')) options.port = Number(arg.slice(7));
    else fail(`unknown option ${arg} (try --help)`);
  }
  if (!Number.isInteger(options.workers) || options.workers < 1 || options.workers > 64) {
    fail('--workers must be a whole number from 1 to 64');
  }
  if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65_535) {
    fail('--port must be a port number from 1 to 65535');
  }
  return options;
}

function fail(message) {
  console.error(`${paint(31, 'tether start:')} ${message}`);
  process.exit(2);
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

const LEVELS = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const LEVEL_COLORS = { 40: 33, 50: 31, 60: 31 };
const SKIP = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'name', 'workerId', 'instanceId', 'v']);

/** A pino JSON line as one readable line; anything else as it is. */
function pretty(label, line) {
  let record;
  try {
    record = JSON.parse(line);
  } catch {
    return `${label} ${line}`;
  }
  const time = new Date(record.time ?? Date.now()).toISOString().slice(11, 23);
  const level = LEVELS[record.level] ?? String(record.level);
  const fields = Object.entries(record)
    .filter(([key]) => !SKIP.has(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(' ');
  const head = paint(LEVEL_COLORS[record.level] ?? 36, level.padEnd(5));
  return `${paint(2, time)} ${label} ${head} ${record.msg ?? ''}${fields ? ` ${paint(2, fields)}` : ''}`;
}

const COLORS = { redis: 35, api: 32 };
const tag = (name) => paint(COLORS[name] ?? 34, name.padEnd(9));

/** The stack while it starts, and once it runs; each of its processes is in a process group of its own. */
let startup;
let stack;
let stopping = false;
const starting = new AbortController();

async function stopAll(exitCode) {
  if (stopping) return;
  stopping = true;
  console.log(paint(2, 'stopping…'));
  // A stack still starting stops what it started (and rejects) once aborted.
  starting.abort();
  const started = stack ?? (await startup?.catch(() => undefined));
  // Services first (they drain), then our own Redis.
  await started?.stop();
  process.exit(exitCode);
}

/** The stack's processes, its own Redis included, with a name each. */
function processes() {
  if (stack === undefined) return [];
  const own = stack.redis ? [{ name: 'redis', child: stack.redis.child }] : [];
  return [...stack.processes, ...own];
}

const options = parseArgs(process.argv.slice(2));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void stopAll(0));
// Whatever way this script ends, nothing it started outlives it.
process.on('exit', () => {
  for (const { child } of processes())
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

if (needsBuild()) {
  console.log(paint(2, 'building (pnpm build)…'));
  const built = spawnSync('pnpm', ['build'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) fail('the build failed (see above)');
}
// Only now: the build makes them.
const { findOnPath, startStack, waitForPing } = await import('@tether/testing/scripts');
const { DEFAULT_MODELS, describeProfile, profilesFromEnv } = await import('@tether/agent/spec');

mkdirSync(join(HOME, 'workspaces'), { recursive: true });
// A cluster's processes find it through REDIS_CLUSTER_NODES (passed through); the stack checks its first seed.
const cluster = process.env.REDIS_CLUSTER_NODES?.trim() || undefined;
const seed = cluster?.split(',')[0]?.trim();
const password = process.env.REDIS_PASSWORD ? `:${encodeURIComponent(process.env.REDIS_PASSWORD)}@` : '';
const given = seed ? `redis://${password}${seed}` : process.env.REDIS_URL;
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

// Up means the API is ready and every worker has said so (each lists itself in /readyz once ready).
startup = startStack({
  redis: given ?? { dir: join(HOME, 'redis'), appendfsync: 'everysec', logLevel: 'notice' },
  apis: 1,
  workers: options.workers,
  port: options.port,
  inheritEnv: true,
  env: {
    TETHER_WORKSPACE_ROOT: process.env.TETHER_WORKSPACE_ROOT ?? join(HOME, 'workspaces'),
    TETHER_ALLOW_REPLAY: process.env.TETHER_ALLOW_REPLAY ?? '1',
  },
  cwd: ROOT,
  detached: true,
  onLine: (name, line) => {
    if (line.trim()) console.log(pretty(tag(name), line));
  },
  maxOutputChars: 16_000,
  readyTimeoutMs: 30_000,
  stopTimeoutMs: 15_000,
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
  for (const { name, child } of processes()) {
    child.once('exit', (code, signal) => {
      if (stopping) return;
      console.error(paint(31, `${name} exited (code ${code}, signal ${signal}); stopping the stack`));
      void stopAll(1);
    });
  }
  const base = stack.urls[0];
  console.log(
    `\n${paint(1, 'Tether is up')} at ${base}  (console: ${base}/console/, API docs: ${base}/docs, ${options.workers} worker${options.workers > 1 ? 's' : ''}, Redis ${cluster ? `Cluster ${cluster}` : stack.redisUrl})\n` +
      `${modelBanner().join('\n')}\n`,
  );
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
