import type { TestProject } from 'vitest/node';
import './context.js';
import { startRedis } from './redis.js';

/**
 * vitest globalSetup for the integration project: one Redis for the whole run,
 * handed to tests through `inject('redisUrl')` (see `testRedisUrl()`), and
 * stopped when the run ends.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await startRedis();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}
