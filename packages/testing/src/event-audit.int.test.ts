import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRunEvents } from './event-audit.js';
import { type OwnRedis, startOwnRedis } from './redis.js';

// A server of its own: the broken logs written here must not reach the suites' shared audit.
let server: OwnRedis;
let redis: Redis;

beforeAll(async () => {
  server = await startOwnRedis();
  redis = new Redis(server.url);
});

afterAll(async () => {
  await redis.quit();
  await server.stop();
});

describe('auditRunEvents', () => {
  it('passes logs that match the protocol and names each event that does not', async () => {
    const good = 'x:run:{run_good}:events';
    await redis.xadd(good, '*', 't', 'run.queued', 'd', '{}');
    await redis.xadd(good, '*', 't', 'run.started', 'd', '{"attempt":1,"workerId":"w"}');
    await redis.xadd(good, '*', 't', 'run.completed', 'd', '{"output":"done"}');
    expect(await auditRunEvents(server.url)).toEqual({ logs: 1, events: 3, problems: [] });

    const bad = 'x:run:{run_bad}:events';
    await redis.xadd(bad, '*', 't', 'run.started', 'd', '{"attempt":"one","workerId":"w"}');
    await redis.xadd(bad, '*', 't', 'no.such.type', 'd', '{}');
    await redis.xadd(bad, '*', 't', 'message', 'd', 'not json');
    await redis.xadd(bad, '*', 't', 'run.failed', 'd', '{"error":{"code":"E","message":"m"}}');
    await redis.xadd(bad, '*', 't', 'usage', 'd', '{"inputTokens":1,"outputTokens":1,"totalTokens":2}');
    const audit = await auditRunEvents(server.url);
    expect(audit.logs).toBe(2);
    expect(audit.problems.map((p) => [p.key, p.problem.split(' ')[0]])).toEqual([
      [bad, 'run.started'],
      [bad, 'no.such.type'],
      [bad, 'data'],
      [bad, 'usage'],
    ]);
    expect(audit.problems[3]?.problem).toContain('follows the terminal event run.failed');

    // A session's run keeps its log under the session's hash tag: audited too.
    const session = 'x:ses:{s_0123456789abcdef}:run:run_insession_0123456789abcdef:events';
    await redis.xadd(session, '*', 't', 'run.started', 'd', '{"attempt":"one","workerId":"w"}');
    const again = await auditRunEvents(server.url);
    expect(again.logs).toBe(3);
    expect(again.problems.filter((p) => p.key === session).map((p) => p.problem.split(' ')[0])).toEqual([
      'run.started',
    ]);
  });
});
