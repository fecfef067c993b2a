import type { Cluster, Redis } from 'ioredis';

/** What the breaker needs of a connection; an ioredis `Redis` has it (a `Cluster` is adapted). */
export interface WatchedConnection {
  readonly status: string;
  ping(): Promise<unknown>;
  on(event: string, listener: () => void): unknown;
  off(event: string, listener: () => void): unknown;
}

/**
 * A Redis Cluster client as a {@link RedisBreaker} watches it. The client's
 * own status says little about an outage: it stays `ready` while one of its
 * masters is down (it says `close` only when it has lost every node), and
 * commands for that master's slots fail (`fail-fast`) or wait (`wait`)
 * meanwhile. So, to the breaker:
 *
 * - `status` is the client's (checked on every request, so nothing costlier);
 * - `error` is the client's, or any node's (a node that went away fails its
 *   reconnect attempts), and opens the breaker;
 * - `ready` is the client's, or any node's (a master that is back), and makes
 *   the breaker probe at once;
 * - `ping` asks every master that serves slots for its `CLUSTER INFO`, and
 *   fails when one of them has no connection, does not answer, or says the
 *   cluster is not ok (a master is missing: every node refuses commands with
 *   `CLUSTERDOWN`, yet answers PING): the cluster is available when each of
 *   its slots is.
 */
export function watchCluster(cluster: Cluster): WatchedConnection {
  const readyListeners = new Set<() => void>();
  const onNodeAdded = (node: Redis) => {
    for (const listener of readyListeners) node.on('ready', listener);
  };
  const onNodeRemoved = (node: Redis) => {
    for (const listener of readyListeners) node.off('ready', listener);
  };
  return {
    get status() {
      return cluster.status;
    },
    ping: () => pingMasters(cluster),
    on(event, listener) {
      cluster.on(event, listener);
      if (event === 'error') cluster.on('node error', listener);
      if (event === 'ready') {
        if (readyListeners.size === 0) {
          cluster.on('+node', onNodeAdded);
          cluster.on('-node', onNodeRemoved);
        }
        readyListeners.add(listener);
        for (const node of cluster.nodes()) node.on('ready', listener);
      }
      return this;
    },
    off(event, listener) {
      cluster.off(event, listener);
      if (event === 'error') cluster.off('node error', listener);
      if (event === 'ready' && readyListeners.delete(listener)) {
        for (const node of cluster.nodes()) node.off('ready', listener);
        if (readyListeners.size === 0) {
          cluster.off('+node', onNodeAdded);
          cluster.off('-node', onNodeRemoved);
        }
      }
      return this;
    },
  };
}

/**
 * Asks each master named in the client's slot map whether the cluster is ok;
 * rejects when one has no connection, fails, or says it is not.
 */
async function pingMasters(cluster: Cluster): Promise<void> {
  const owners = new Set<string>();
  for (const nodes of cluster.slots) {
    const master = nodes?.[0];
    if (master) owners.add(master);
  }
  if (owners.size === 0) {
    await cluster.ping();
    return;
  }
  const connections = new Map<string, Redis>();
  for (const node of cluster.nodes('master')) {
    connections.set(`${node.options.host}:${node.options.port}`, node);
  }
  await Promise.all(
    [...owners].map((owner) => {
      const node = connections.get(owner);
      if (!node) return Promise.reject(new Error(`no connection to the cluster's master ${owner}`));
      return node.cluster('INFO').then((info) => {
        const state = /cluster_state:(\w+)/.exec(String(info))?.[1];
        if (state !== 'ok') throw new Error(`master ${owner} says cluster_state:${state}`);
      });
    }),
  );
}
