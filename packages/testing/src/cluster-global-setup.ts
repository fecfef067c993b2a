import type { TestProject } from 'vitest/node';
import './context.js';
import { checkRunEvents } from './event-audit.js';
import { startRedisCluster } from './redis.js';

/**
 * vitest globalSetup for the `cluster` project: one Redis Cluster of three
 * masters for the whole run, handed to tests through
 * `inject('redisClusterNodes')` (see `testRedisEnv()` and `testRedisTarget()`),
 * and stopped when the run ends, after the run events on every master are
 * checked against the protocol (see `checkRunEvents`).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startRedisCluster();
  project.provide('redisClusterNodes', cluster.nodes.join(','));
  project.provide('redisUrl', '');
  return async () => {
    try {
      await checkRunEvents(cluster.nodes.map((node) => `redis://${node}`));
    } finally {
      await cluster.stop();
    }
  };
}
