import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where a test Redis came from. */
export type RedisSource = 'env' | 'local' | 'container';

/** A Redis server for tests, and how to let it go. */
export interface TestRedis {
  url: string;
  source: RedisSource;
  /** Stops what this helper started; a server given by `REDIS_URL` is left alone. */
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** Overrides `process.env.REDIS_URL`. */
  url?: string | undefined;
  /** How long to wait for a started server to answer PING (ms). Default 15,000. */
  readyTimeoutMs?: number;
}

export const REDIS_HOW_TO =
  'No Redis for the integration tests. Either set REDIS_URL=redis://host:port, ' +
  'or install a local server (Debian/Ubuntu: `apt-get install -y redis-server`; macOS: `brew install redis`) ' +
  'so `redis-server` is on PATH, or start a Docker engine so testcontainers can run `redis:7-alpine`.';

/**
 * Gives integration tests a real Redis, in this order: `REDIS_URL` if set; else a
 * `redis-server` from PATH on a free loopback port with a temporary directory
 * (killed by `stop()`); else a testcontainers Redis when a Docker engine is
 * reachable; else an error that says how to get one.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 15_000;
  const url = options.url ?? process.env.REDIS_URL;
  if (url) {
    await waitForPing(url, readyTimeoutMs);
    return { url, source: 'env', stop: async () => {} };
  }
  if (findOnPath('redis-server')) return startRedisServer({ readyTimeoutMs });
  if (dockerReachable()) return startContainer();
  throw new Error(REDIS_HOW_TO);
}

/** The first executable called `name` on PATH, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

function dockerReachable(): boolean {
  if (process.env.DOCKER_HOST) return true;
  if (!existsSync('/var/run/docker.sock')) return false;
  const probe = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 5_000 });
  return probe.status === 0;
}

/** A free TCP port on loopback, as the kernel hands it out. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port of a probe server'));
      });
    });
  });
}

/** How {@link startRedisServer} runs `redis-server`. */
export interface RedisServerOptions {
  /** Its data directory, kept (default: a temporary one, removed by `stop()`). */
  dir?: string;
  /**
   * Its port (default: a free one, a few tried). A given port is tried once: the caller checks
   * it is free first, as a busy one may hold another Redis that would answer PING.
   */
  port?: number;
  /** The append-only file's fsync policy, or `off` for no append-only file (default). */
  appendfsync?: 'always' | 'everysec' | 'off';
  /** Its log level (default `warning`). */
  logLevel?: 'warning' | 'notice';
  /** Called with each line it logs. */
  onLine?: (line: string) => void;
  /** In a process group of its own, so a Ctrl-C at the terminal reaches only the parent. */
  detached?: boolean;
  /** How long to wait for it to answer PING (ms). Default 15,000. */
  readyTimeoutMs?: number;
  /** How long `stop()` waits after SIGTERM before SIGKILL (ms). Default 3,000. */
  stopTimeoutMs?: number;
}

/** A `redis-server` started by {@link startRedisServer}. */
export interface StartedRedis extends TestRedis {
  child: ChildProcess;
}

/**
 * Starts a `redis-server` from PATH on a free loopback port (a few ports are
 * tried: one can be taken between the probe and the bind), with no RDB
 * snapshots and `noeviction`; resolves once it answers PING.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<StartedRedis> {
  const binary = findOnPath('redis-server');
  if (!binary) throw new Error(REDIS_HOW_TO);
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'tether-redis-')));
  const removeDir =
    options.dir === undefined ? () => rm(dir, { recursive: true, force: true }) : async () => {};
  const fsync = options.appendfsync ?? 'off';
  const persistence =
    fsync === 'off'
      ? ['--save', '', '--appendonly', 'no']
      : ['--appendonly', 'yes', '--appendfsync', fsync, '--save', ''];
  let lastError: unknown;
  for (let tries = 0; tries < (options.port === undefined ? 5 : 1); tries++) {
    const port = options.port ?? (await freePort());
    try {
      const child = await spawnRedisServer(binary, port, dir, options, persistence);
      return {
        url: `redis://127.0.0.1:${port}`,
        source: 'local',
        child,
        stop: async () => {
          await kill(child, options.stopTimeoutMs);
          await removeDir();
        },
      };
    } catch (error) {
      lastError = error;
    }
  }
  await removeDir();
  throw new Error(`redis-server (${binary}) did not start: ${String(lastError)}`);
}

/** A `redis-server` of the test's own, which the test may take down and bring back with its data. */
export interface OwnRedis {
  url: string;
  /** The server's process id while it runs. */
  pid(): number | undefined;
  /** SIGKILL, as in a crash: its connections drop at once. What it acknowledged is in its append-only file. */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data directory; resolves once it answers PING. */
  restart(): Promise<void>;
  /** SIGSTOP: the server hangs, its connections stay open and unanswered. */
  pause(): void;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Kills the server and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * Starts a `redis-server` from PATH for one test (never `REDIS_URL` or a
 * container: the test kills and restarts it). Every write is in its
 * append-only file before Redis acknowledges it (`appendfsync always`), so a
 * `kill()` and `restart()` lose nothing.
 */
export async function startOwnRedis(options: { readyTimeoutMs?: number } = {}): Promise<OwnRedis> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 15_000;
  const binary = findOnPath('redis-server');
  if (!binary) {
    throw new Error(
      'This test kills and restarts a redis-server of its own: install one on PATH (Debian/Ubuntu: `apt-get install -y redis-server`; macOS: `brew install redis`).',
    );
  }
  const dir = await mkdtemp(join(tmpdir(), 'tether-own-redis-'));
  const persistence = ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always'];
  let lastError: unknown;
  for (let tries = 0; tries < 5; tries++) {
    const port = await freePort();
    let child: ChildProcess;
    try {
      child = await spawnRedisServer(binary, port, dir, { readyTimeoutMs }, persistence);
    } catch (error) {
      lastError = error;
      continue;
    }
    const running = () => child.exitCode === null && child.signalCode === null;
    const signal = (name: NodeJS.Signals) => {
      if (running()) child.kill(name);
    };
    const crash = async () => {
      if (!running()) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await gone;
    };
    return {
      url: `redis://127.0.0.1:${port}`,
      pid: () => (running() ? child.pid : undefined),
      kill: crash,
      async restart() {
        await crash();
        child = await spawnRedisServer(binary, port, dir, { readyTimeoutMs }, persistence);
      },
      pause: () => signal('SIGSTOP'),
      resume: () => signal('SIGCONT'),
      async stop() {
        signal('SIGCONT');
        await kill(child);
        await rm(dir, { recursive: true, force: true });
      },
    };
  }
  await rm(dir, { recursive: true, force: true });
  throw new Error(`redis-server (${binary}) did not start: ${String(lastError)}`);
}

/** A Redis Cluster of three masters on loopback, started by {@link startRedisCluster}. */
export interface TestRedisCluster {
  /** The masters as `127.0.0.1:<port>`, the seed list Tether takes in `REDIS_CLUSTER_NODES`. */
  nodes: readonly string[];
  /** SIGKILL of master `index` (0 to 2), as in a crash; its slots stay its own. */
  kill(index: number): Promise<void>;
  /**
   * Starts master `index` again on its port, with its node id and slots (its
   * cluster config file) and no data; resolves once every node says
   * `cluster_state:ok` again.
   */
  restart(index: number): Promise<void>;
  /** Kills every node and removes their directories. */
  stop(): Promise<void>;
}

/** Each cluster node's arguments besides its port and directory. */
const CLUSTER_NODE_ARGS = [
  '--cluster-enabled',
  'yes',
  '--cluster-config-file',
  'nodes.conf',
  // How long a node may be unreachable before the others mark it failed (ms): short for
  // tests, not so short that a loaded machine makes the cluster flap.
  '--cluster-node-timeout',
  '5000',
  '--save',
  '',
  '--appendonly',
  'no',
];

/**
 * Starts a Redis Cluster of three masters and no replicas from `redis-server`
 * and `redis-cli` on PATH: one `redis-server --cluster-enabled yes` per free
 * loopback port, each in a temporary directory of its own, joined by
 * `redis-cli --cluster create`; resolves once every node's `CLUSTER INFO`
 * says `cluster_state:ok`.
 */
export async function startRedisCluster(
  options: { readyTimeoutMs?: number } = {},
): Promise<TestRedisCluster> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const binary = findOnPath('redis-server');
  const cli = findOnPath('redis-cli');
  if (!binary || !cli) {
    throw new Error(
      'A test Redis Cluster needs redis-server and redis-cli on PATH (Debian/Ubuntu: `apt-get install -y redis-server`; macOS: `brew install redis`).',
    );
  }
  const masters: { port: number; dir: string; child: ChildProcess | undefined }[] = [];
  const stop = async () => {
    for (const master of masters) {
      if (master.child) await kill(master.child);
      await rm(master.dir, { recursive: true, force: true });
    }
  };
  try {
    for (let index = 0; index < 3; index++) {
      const dir = await mkdtemp(join(tmpdir(), `tether-cluster-${index}-`));
      const master = { port: 0, dir, child: undefined as ChildProcess | undefined };
      masters.push(master);
      let lastError: unknown;
      // A port can be taken between the probe and the bind: try a few.
      for (let tries = 0; tries < 5 && !master.child; tries++) {
        master.port = await freePort();
        try {
          master.child = await spawnRedisServer(
            binary,
            master.port,
            dir,
            { readyTimeoutMs },
            CLUSTER_NODE_ARGS,
          );
        } catch (error) {
          lastError = error;
        }
      }
      if (!master.child) throw new Error(`redis-server (${binary}) did not start: ${String(lastError)}`);
    }
    const nodes = masters.map((master) => `127.0.0.1:${master.port}`);
    await run(cli, ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], {
      timeout: readyTimeoutMs,
    });
    await waitForClusterOk(cli, masters, readyTimeoutMs);
    const master = (index: number) => {
      const found = masters[index];
      if (!found)
        throw new RangeError(`the test cluster has masters 0 to ${masters.length - 1}, not ${index}`);
      return found;
    };
    const crash = async (index: number) => {
      const killed = master(index);
      const child = killed.child;
      killed.child = undefined;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      await gone;
    };
    return {
      nodes,
      kill: crash,
      async restart(index) {
        await crash(index);
        const restarted = master(index);
        restarted.child = await spawnRedisServer(
          binary,
          restarted.port,
          restarted.dir,
          { readyTimeoutMs },
          CLUSTER_NODE_ARGS,
        );
        await waitForClusterOk(cli, masters, readyTimeoutMs);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Resolves once every node's `CLUSTER INFO` says `cluster_state:ok`; rejects after `timeoutMs`. */
async function waitForClusterOk(
  cli: string,
  masters: readonly { port: number }[],
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let states: string[] = [];
  while (Date.now() < deadline) {
    states = await Promise.all(
      masters.map(async ({ port }) => {
        try {
          const { stdout } = await run(cli, ['-h', '127.0.0.1', '-p', String(port), 'cluster', 'info'], {
            timeout: 2_000,
          });
          return /cluster_state:(\w+)/.exec(stdout)?.[1] ?? 'unknown';
        } catch (error) {
          return `unreachable (${String(error)})`;
        }
      }),
    );
    if (states.every((state) => state === 'ok')) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const report = masters.map(({ port }, index) => `${port}: ${states[index]}`).join(', ');
  throw new Error(`the test cluster did not reach cluster_state:ok within ${timeoutMs} ms (${report})`);
}

/**
 * Starts `redis-server` on a loopback port with its files in `dir` and
 * `extraArgs` (its `--save` and `--appendonly` arguments, and a cluster
 * node's); resolves once it answers PING, or kills it and rejects.
 */
async function spawnRedisServer(
  binary: string,
  port: number,
  dir: string,
  options: Pick<RedisServerOptions, 'readyTimeoutMs' | 'logLevel' | 'onLine' | 'detached'>,
  extraArgs: string[],
): Promise<ChildProcess> {
  const onLine = options.onLine;
  const child = spawn(
    binary,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      ...extraArgs,
      '--maxmemory-policy',
      'noeviction',
      '--loglevel',
      options.logLevel ?? 'warning',
    ],
    {
      stdio: ['ignore', onLine ? 'pipe' : 'ignore', 'pipe'],
      detached: options.detached ?? false,
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  if (onLine) {
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream?.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) onLine(line);
      });
    }
  }
  try {
    await Promise.race([
      waitForPing(`redis://127.0.0.1:${port}`, options.readyTimeoutMs ?? 15_000),
      exited(child, () => stderr),
    ]);
    return child;
  } catch (error) {
    await kill(child);
    throw error;
  }
}

function exited(child: ChildProcess, stderr: () => string): Promise<never> {
  return new Promise((_, reject) => {
    child.once('exit', (code, signal) => {
      reject(new Error(`redis-server exited early (code ${code}, signal ${signal}): ${stderr().trim()}`));
    });
  });
}

async function kill(child: ChildProcess, killAfterMs = 3_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  await gone;
  clearTimeout(timer);
}

async function startContainer(): Promise<TestRedis> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('redis:7-alpine')
    .withExposedPorts(6379)
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
  return {
    url,
    source: 'container',
    stop: async () => {
      await container.stop();
    },
  };
}

/** Resolves once the server at `url` answers PING; rejects after `timeoutMs`. */
export async function waitForPing(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      await ping(url);
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`Redis at ${redact(url)} did not answer PING within ${timeoutMs} ms: ${String(lastError)}`);
}

function ping(url: string): Promise<void> {
  const parsed = new URL(url);
  const port = Number(parsed.port || 6379);
  const auth = parsed.password
    ? `AUTH ${parsed.username ? `${decodeURIComponent(parsed.username)} ` : ''}${decodeURIComponent(parsed.password)}\r\n`
    : '';
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: parsed.hostname, port });
    let reply = '';
    socket.setTimeout(1_000, () => socket.destroy(new Error('timeout')));
    socket.on('connect', () => socket.write(`${auth}PING\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('+PONG')) {
        socket.end();
        resolve();
      } else if (reply.includes('-')) {
        socket.destroy();
        reject(new Error(reply.trim()));
      }
    });
    socket.on('error', reject);
  });
}

function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}
