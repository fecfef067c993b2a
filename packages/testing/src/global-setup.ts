import type { TestProject } from 'vitest/node';
import './context.js';
import { auditRunEvents } from './event-audit.js';
import { startRedis } from './redis.js';

/**
 * vitest globalSetup for the integration project: one Redis for the whole run,
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
      const audit = await auditRunEvents(redis.url);
      if (audit.problems.length > 0) {
        // A teardown that throws is reported but leaves vitest's exit code alone.
        process.exitCode = 1;
        const lines = audit.problems.slice(0, 20).map((p) => `- ${p.key} ${p.id}: ${p.problem}`);
        throw new Error(
          `${audit.problems.length} of ${audit.events} run events break the event contract:\n${lines.join('\n')}`,
        );
      }
      console.log(`event audit: ${audit.events} events of ${audit.logs} runs match RunEventSchema`);
    } finally {
      await redis.stop();
    }
  };
}
