import type { TestProject } from 'vitest/node';
import './context.js';
import { checkRunEvents } from './event-audit.js';
import { startRedis } from './redis.js';

/**
 * vitest globalSetup for a project whose files share one Redis (the engine's stress, on one
 * server; the suite's integration files have one each, see file-redis.ts): one Redis for the whole run,
 * handed to tests through `inject('redisUrl')` (see `testRedisUrl()`), and
 * stopped when the run ends. Before it stops, every event the suites' runs
 * wrote is checked against the protocol (see `auditRunEvents`): one that does
 * not match fails the run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await startRedis();
  project.provide('redisUrl', redis.url);
  return async () => {
    try {
      await checkRunEvents([redis.url]);
    } finally {
      await redis.stop();
    }
  };
}
