#!/usr/bin/env node
// pnpm start [--workers N] [--port P]: the local stack in one terminal.
// Builds if needed, finds or starts Redis, runs the API and N workers with readable logs,
// and stops everything (its own redis-server included) on Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const HOME = resolve(ROOT, process.env.TETHER_HOME ?? '.tether');
// A small young generation keeps a long-lived worker's RSS near its idle size after bursts
// (see BENCHMARKS.md, suspended capacity).
const WORKER_NODE_FLAGS = ['--max-semi-space-size=2'];
const USE_COLOR = process.stdout.isTTY && !process.env.NO_COLOR;
const paint = (code, text) => (USE_COLOR ? `\x1b[${code}m${text}\x1b[0m` : text);

function usage(exitCode) {
  console.log(`Usage: pnpm start [--workers N] [--port P]

Runs the Tether API (http://127.0.0.1:P, default 3000) and N workers (default 1).
Redis: REDIS_URL if set; else a local redis-server with its data under ${HOME}/redis.
Environment is passed through (model profiles: OPENAI_API_KEY, OPENAI_BASE_URL, TETHER_MODEL).`);
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

function onPath(name) {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

function freePort() {
  return new Promise((done, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function ping(url) {
  const { hostname, port, password } = new URL(url);
  return new Promise((done) => {
    const socket = createConnection({ host: hostname, port: Number(port || 6379) });
    socket.setTimeout(1_000, () => socket.destroy());
    socket.on('connect', () =>
      socket.write(`${password ? `AUTH ${decodeURIComponent(password)}\r\n` : ''}PING\r\n`),
    );
    socket.on('data', (chunk) => {
      socket.end();
      done(chunk.toString().includes('PONG'));
    });
    socket.on('error', () => done(false));
    socket.on('close', () => done(false));
  });
}

async function waitFor(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not come up within ${timeoutMs / 1000} s`);
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

const children = [];

function run(label, command, args, env, color) {
  // Each child in its own process group: Ctrl-C reaches only this script, which stops the
  // services first and its Redis last, instead of everything at once.
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const tag = paint(color, label.padEnd(9));
  for (const stream of [child.stdout, child.stderr]) {
    let rest = '';
    stream.on('data', (chunk) => {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) console.log(pretty(tag, line));
    });
  }
  const entry = {
    label,
    child,
    exited: new Promise((done) => child.once('exit', (code, signal) => done({ code, signal }))),
  };
  children.push(entry);
  return entry;
}

async function stopAll(exitCode) {
  if (stopAll.started) return;
  stopAll.started = true;
  console.log(paint(2, 'stopping…'));
  // Services first (they drain), then our own Redis.
  const ordered = [...children].sort((a, b) => (a.label === 'redis') - (b.label === 'redis'));
  for (const group of [
    ordered.filter((c) => c.label !== 'redis'),
    ordered.filter((c) => c.label === 'redis'),
  ]) {
    await Promise.all(
      group.map(async ({ child, exited }) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }
  process.exit(exitCode);
}

const options = parseArgs(process.argv.slice(2));
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => void stopAll(0));
// Whatever way this script ends, nothing it started outlives it.
process.on('exit', () => {
  for (const { child } of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

if (needsBuild()) {
  console.log(paint(2, 'building (pnpm build)…'));
  const built = spawnSync('pnpm', ['build'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) fail('the build failed (see above)');
}

mkdirSync(join(HOME, 'workspaces'), { recursive: true });
let redisUrl = process.env.REDIS_URL;
if (redisUrl) {
  if (!(await ping(redisUrl))) fail(`REDIS_URL=${redisUrl} does not answer PING`);
} else {
  const binary = onPath('redis-server');
  if (!binary) {
    fail(`no Redis. Either install one so redis-server is on PATH
  (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis),
or start one with Docker: docker compose up -d redis, then REDIS_URL=redis://127.0.0.1:6379 pnpm start`);
  }
  const port = await freePort();
  const dir = join(HOME, 'redis');
  mkdirSync(dir, { recursive: true });
  run(
    'redis',
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'everysec',
      '--maxmemory-policy',
      'noeviction',
      '--save',
      '',
    ],
    { PATH: process.env.PATH },
    35,
  );
  redisUrl = `redis://127.0.0.1:${port}`;
  await waitFor(() => ping(redisUrl), 15_000, 'redis-server');
}

const env = {
  ...process.env,
  REDIS_URL: redisUrl,
  TETHER_WORKSPACE_ROOT: process.env.TETHER_WORKSPACE_ROOT ?? join(HOME, 'workspaces'),
  TETHER_ALLOW_REPLAY: process.env.TETHER_ALLOW_REPLAY ?? '1',
};
const api = run(
  'api',
  process.execPath,
  [join(ROOT, 'apps/api/dist/server.js')],
  { ...env, PORT: String(options.port) },
  32,
);
for (let i = 1; i <= options.workers; i++) {
  run(
    `worker-${i}`,
    process.execPath,
    [...WORKER_NODE_FLAGS, join(ROOT, 'apps/worker/dist/main.js')],
    { ...env, TETHER_WORKER_ID: `worker-${i}` },
    34,
  );
}
for (const { label, exited } of children) {
  exited.then(({ code, signal }) => {
    if (stopAll.started) return;
    console.error(paint(31, `${label} exited (code ${code}, signal ${signal}); stopping the stack`));
    void stopAll(1);
  });
}

const base = `http://127.0.0.1:${options.port}`;
try {
  await waitFor(
    async () => {
      if (api.child.exitCode !== null) throw new Error('the API exited');
      // Up means the API is ready and every worker has said so (each lists itself in /readyz once ready).
      const response = await fetch(`${base}/readyz`).catch(() => undefined);
      if (response?.ok !== true) return false;
      const { workers = [] } = await response.json();
      return workers.length >= options.workers;
    },
    30_000,
    'the API and the workers',
  );
} catch (error) {
  console.error(paint(31, String(error.message ?? error)));
  await stopAll(1);
}
console.log(
  `\n${paint(1, 'Tether is up')} at ${base}  (API docs: ${base}/docs, ${options.workers} worker${options.workers > 1 ? 's' : ''}, Redis ${redisUrl})\n` +
    `  try: ${paint(1, 'pnpm demo')}   or: ${paint(1, `pnpm tether run "list the files"`)}   stop: Ctrl-C\n`,
);
