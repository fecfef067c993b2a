import { createConnection, type Socket } from 'node:net';
import { AbstractConnector, Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';

/**
 * A connection as Tether's code takes it: one Redis server, or ioredis's
 * client of a Redis Cluster. Both run the same commands, pipelines and
 * scripts; on a cluster each command, pipeline and script must keep to one
 * hash slot (see keys.ts).
 */
export type RedisClient = Redis | Cluster;

/**
 * How a connection's commands behave while Redis is unreachable:
 * - `fail-fast` (the API, on request paths): no offline queue, so a command
 *   sent while the connection is down fails at once; one sent just before it
 *   went down fails as soon as ioredis notices (`maxRetriesPerRequest: 0`);
 *   one left unanswered (a Redis that hangs) fails after
 *   {@link COMMAND_TIMEOUT_MS}.
 * - `wait` (the worker): commands wait for Redis to come back and are sent
 *   then, so an attempt in flight pauses at its next save and goes on.
 *   BullMQ's blocking connections need this (`maxRetriesPerRequest: null`).
 *
 * On a cluster the same holds per node: a node that is down fails a
 * `fail-fast` command at once (even while the others answer), and holds a
 * `wait` command until it, or a replica that took its place, answers.
 */
export type RedisMode = 'fail-fast' | 'wait';

/** A Redis Cluster node, as a seed of `REDIS_CLUSTER_NODES`. */
export interface RedisNode {
  host: string;
  port: number;
}

export interface RedisConnectionOptions {
  /** `redis://` or `rediss://` URL of one server; ignored when `clusterNodes` are given. */
  url: string;
  /**
   * Seed nodes of a Redis Cluster: when given (at least one), the connection
   * is ioredis's `Cluster` client, which learns the other nodes from them.
   */
  clusterNodes?: readonly RedisNode[] | undefined;
  /**
   * The password of every node of the cluster, or of the server when `url`
   * has none (a password in the URL wins).
   */
  password?: string | undefined;
  /**
   * A connection for SUBSCRIBE only. On a cluster it is not a `Cluster` client
   * but one server's connection to one node (any node hears every PUBLISH of
   * the cluster), which moves to the next seed node when it reconnects: so it
   * says `close` and `ready` when it lost its subscriptions and has them back,
   * which the cluster client does not (it moves its subscriber to another node
   * without a word, and what is published meanwhile is lost).
   */
  subscriber?: boolean | undefined;
  /** The connection's name in `CLIENT LIST`. */
  name: string;
  mode: RedisMode;
  /**
   * Told of each of the connection's `error` events (ioredis reports every
   * failed reconnect attempt). Required: without a listener ioredis prints
   * `[ioredis] Unhandled error event` and a stack at every attempt.
   */
  onError: (error: Error) => void;
}

/** The longest wait between two reconnect attempts (ms): Redis is used again within this of its return. */
export const RECONNECT_MAX_DELAY_MS = 500;
/** How long a `fail-fast` command may go unanswered (ms). */
export const COMMAND_TIMEOUT_MS = 2_000;
/** How long one connection attempt may take (ms): a host that does not answer is tried again after this. */
export const CONNECT_TIMEOUT_MS = 2_000;
/** How often a connection asks a Redis that is loading its data whether it is done (ms). */
export const LOADING_RETRY_MS = 100;

/**
 * The wait before reconnect attempt `attempt` (1-based): 50, 100, 200 ms and
 * then 400 ms, each plus up to 100 ms of jitter (so that many processes do not
 * reconnect in step), never more than {@link RECONNECT_MAX_DELAY_MS}.
 */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(50 * 2 ** Math.max(0, attempt - 1), RECONNECT_MAX_DELAY_MS - 100);
  return base + Math.floor(random() * 100);
}

/** The options of each mode; every Redis connection of Tether is made by {@link createRedisConnection}. */
export function redisOptions(mode: RedisMode, name: string): RedisOptions {
  const common: RedisOptions = {
    connectionName: name,
    retryStrategy: (attempt) => reconnectDelay(attempt),
    connectTimeout: CONNECT_TIMEOUT_MS,
    // A Redis that restarts answers "loading" while it reads its data back: ioredis would check
    // again after the server's estimate (1 s at least), so a connection would lag that long.
    maxLoadingRetryTime: LOADING_RETRY_MS,
  };
  if (mode === 'fail-fast') {
    return {
      ...common,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
    };
  }
  return { ...common, maxRetriesPerRequest: null };
}

/**
 * The options of a Cluster client in each mode. Each node's connection has
 * the options of the mode ({@link redisOptions}) and reconnects as a single
 * server's does (ioredis's default drops a node that went away until a slot
 * map names it again), so a `wait` command queued on a node that restarts is
 * sent once it is back. When every node is unreachable the client as a whole
 * reconnects with the same delays.
 *
 * - `fail-fast`: no offline queue, and a command for a node whose connection
 *   is down, or refused with `CLUSTERDOWN` (a master is missing), fails at
 *   once: no retry elsewhere (`retryDelayOnFailover` and
 *   `retryDelayOnClusterDown` 0). No ready check of the client's own: its
 *   CLUSTER INFO, sent without an offline queue to a node whose connection
 *   is still being made, would fail and make the client start over (and the
 *   `RedisBreaker` checks every master's `cluster_state` instead).
 * - `wait`: an offline queue; a command waits on its node's connection while
 *   that reconnects, and one refused while the cluster is down, or whose node
 *   was replaced (a failover), is sent again every 100 ms until it is served:
 *   no limit on those redirections, as there is none on a single server's
 *   `wait` retries. A `MOVED` is followed after 10 ms, so that even a slot
 *   map that bounced between two nodes could not spin.
 */
export function clusterOptions(mode: RedisMode, name: string, password?: string): ClusterOptions {
  const { retryStrategy, enableOfflineQueue: _queue, ...node } = redisOptions(mode, name);
  const common: ClusterOptions = {
    redisOptions: password === undefined ? node : { ...node, password },
    clusterRetryStrategy: (attempt) => reconnectDelay(attempt),
    clusterNodeRetryStrategy: retryStrategy,
  };
  if (mode === 'fail-fast') {
    return {
      ...common,
      enableOfflineQueue: false,
      enableReadyCheck: false,
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 0,
    };
  }
  return {
    ...common,
    enableOfflineQueue: true,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnMoved: 10,
    maxRedirections: Number.POSITIVE_INFINITY,
  };
}

/**
 * A Redis connection with the options of its mode and an `error` listener:
 * the one place Tether's processes create one. With `clusterNodes` it is a
 * `Cluster` client (whose nodes' errors are reported as well). ioredis keeps
 * reconnecting on its own; a {@link RedisBreaker} tells when it is back.
 */
export function createRedisConnection(options: RedisConnectionOptions): RedisClient {
  const { clusterNodes, password } = options;
  if (clusterNodes && clusterNodes.length > 0 && options.subscriber) {
    const connection = new Redis({
      ...redisOptions(options.mode, options.name),
      ...(password === undefined ? {} : { password }),
      Connector: nodeRotation(clusterNodes),
    });
    connection.on('error', options.onError);
    return connection;
  }
  if (clusterNodes && clusterNodes.length > 0) {
    const cluster = new Cluster(
      clusterNodes.map(({ host, port }) => ({ host, port })),
      clusterOptions(options.mode, options.name, password),
    );
    cluster.on('error', options.onError);
    cluster.on('node error', options.onError);
    // ioredis connects to a node at its first command, and a `fail-fast` command finds the node
    // still connecting and fails: connect to each master as soon as the slot map names it.
    cluster.on('+node', (node: Redis) => {
      if (node.status === 'wait' && !node.options.readOnly) node.connect().catch(() => {});
    });
    return cluster;
  }
  const connection = new Redis(options.url, {
    ...redisOptions(options.mode, options.name),
    ...(password === undefined ? {} : { password }),
  });
  connection.on('error', options.onError);
  return connection;
}

/**
 * How a subscriber connection reaches a cluster: each connection attempt goes
 * to the next of `nodes`, so one that is down is left for the next.
 */
function nodeRotation(nodes: readonly RedisNode[]): new (options: unknown) => AbstractConnector {
  let next = 0;
  return class NodeRotation extends AbstractConnector {
    constructor(_options: unknown) {
      // How long a disconnect waits for the socket to close before destroying it (ioredis's default).
      super(2_000);
    }

    connect(): Promise<Socket> {
      const node = nodes[next++ % nodes.length] as RedisNode;
      this.connecting = true;
      // As ioredis's own connector: the socket is made on the next tick, unless disconnected meanwhile.
      return new Promise((resolve, reject) => {
        process.nextTick(() => {
          if (!this.connecting) {
            reject(new Error('Connection is closed.'));
            return;
          }
          const socket = createConnection({ host: node.host, port: node.port });
          socket.once('error', (error) => {
            this.firstError = error;
          });
          this.stream = socket;
          resolve(socket);
        });
      });
    }
  };
}

/**
 * Resolves when the connection is ready to serve commands (a Cluster client:
 * ready, and every master's connection too), or at its first error.
 */
export function connectionReady(connection: RedisClient): Promise<void> {
  return new Promise((resolve) => {
    const watched: RedisClient[] = [connection];
    const done = () => {
      for (const each of watched) {
        each.off('ready', check);
        each.off('error', done);
      }
      connection.off('node error', done);
      resolve();
    };
    const check = () => {
      if (connection.status !== 'ready') return;
      if (!isCluster(connection)) return done();
      const masters = connection.nodes('master');
      if (masters.length > 0 && masters.every((node) => node.status === 'ready')) return done();
      for (const node of masters) {
        if (watched.includes(node)) continue;
        watched.push(node);
        node.on('ready', check);
      }
    };
    connection.on('ready', check);
    connection.on('error', done);
    if (isCluster(connection)) connection.on('node error', done);
    check();
  });
}

/** Whether a connection is a Redis Cluster client. */
export function isCluster(connection: RedisClient): connection is Cluster {
  return 'isCluster' in connection && connection.isCluster === true;
}

/** Every key matching `pattern`: one SCAN per master of a cluster. */
export async function scanKeys(redis: RedisClient, pattern: string): Promise<string[]> {
  const found = new Set<string>();
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) found.add(key);
    } while (cursor !== '0');
  }
  return [...found];
}

const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * Whether an error says Redis could not be reached (rather than that it
 * refused a command): a request that failed with it may succeed later.
 */
export function isRedisConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ConnectionClosedError') return true;
  if (error.name === 'ClusterAllFailedError') return true;
  if ('code' in error && CONNECTION_ERROR_CODES.has(String(error.code))) return true;
  return CONNECTION_ERROR_MESSAGE.test(error.message);
}

/**
 * The messages of a command that could not reach Redis: a single server's,
 * and a cluster's (not ready yet, every seed down, redirected too often while
 * a node was down, a cluster that refuses commands while a master is missing).
 */
const CONNECTION_ERROR_MESSAGE = new RegExp(
  [
    "^Connection is closed|^Stream isn't writeable|^Command timed out",
    "^Cluster isn't ready|^None of startup nodes is available|^Too many Cluster redirections|^Cluster is ended|^CLUSTERDOWN|^TRYAGAIN|^Failed to refresh slots cache",
  ].join('|'),
);
