import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** The `cluster` project's Redis Cluster: its seed nodes as `REDIS_CLUSTER_NODES` takes them. */
    redisClusterNodes: string;
  }
}

/**
 * The environment variable through which a test file's own Redis (see file-redis.ts) is found: set
 * in the file's process before the file is imported.
 */
export const FILE_REDIS_ENV = 'TETHER_TEST_FILE_REDIS_URL';

/**
 * The test Redis's URL: the file's own (the `integration` and `serial` projects start one per test
 * file, see file-redis.ts), else the one a project's global setup started or found.
 */
export function testRedisUrl(): string {
  const own = process.env[FILE_REDIS_ENV];
  if (own) return own;
  const url = inject('redisUrl');
  if (!url) throw new Error('No redisUrl provided: run this test in the `integration` vitest project.');
  return url;
}

/**
 * The seed nodes (`host:port,host:port,…`) of the Redis Cluster that the
 * `cluster` project's global setup started; undefined in the other projects.
 */
export function testRedisClusterNodes(): string | undefined {
  return inject('redisClusterNodes') || undefined;
}

/**
 * The test Redis as the apps' environment names it: `REDIS_CLUSTER_NODES` in
 * the `cluster` project, `REDIS_URL` in the `integration` project.
 */
export function testRedisEnv(): Record<string, string> {
  const nodes = testRedisClusterNodes();
  return nodes ? { REDIS_CLUSTER_NODES: nodes } : { REDIS_URL: testRedisUrl() };
}

/**
 * The test Redis as `createRedisConnection` (of @tether/store) takes it: a
 * URL, or in the `cluster` project the cluster's seed nodes.
 */
export function testRedisTarget(): { url: string; clusterNodes?: { host: string; port: number }[] } {
  const nodes = testRedisClusterNodes();
  if (!nodes) return { url: testRedisUrl() };
  return {
    url: '',
    clusterNodes: nodes.split(',').map((node) => {
      const [host = '', port = ''] = node.split(':');
      return { host, port: Number(port) };
    }),
  };
}

/** A key prefix of its own for each test, so tests never see each other's keys. */
export function uniquePrefix(name = 'test'): string {
  return `{t-${name}-${randomBytes(4).toString('hex')}}`;
}
