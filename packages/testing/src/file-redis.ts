import { afterAll } from 'vitest';
import { FILE_REDIS_ENV } from './context.js';
import { checkRunEvents } from './event-audit.js';
import { startRedis } from './redis.js';

/**
 * vitest setup file of the `integration` and `serial` projects: a Redis of the test file's own,
 * started before the file is imported and found through `testRedisUrl()` (and everything built on
 * it: `testRedisEnv()`, `testRedisTarget()`), so files run side by side without sharing a server.
 * When the file is done, every event its runs wrote is checked against the protocol (see
 * `checkRunEvents`), then the server stops.
 */
const redis = await startRedis();
process.env[FILE_REDIS_ENV] = redis.url;

afterAll(async () => {
  try {
    // Quiet: one line per file would fill the log; a broken event fails the file.
    await checkRunEvents([redis.url], { quiet: true });
  } finally {
    await redis.stop();
    delete process.env[FILE_REDIS_ENV];
  }
}, 60_000);
