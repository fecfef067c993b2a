/**
 * `POST /v1/runs/:id/messages` in process: messages for a live run (here queued, with no worker),
 * their events, the limits, tenancy and bad input. What a worker does with them is
 * apps/worker/test/steering.int.test.ts.
 */
import { STEER_LIMITS } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, endRun, expectServing, runEvents, submit } from './helper.js';

const steer = (
  app: FastifyInstance,
  runId: string,
  payload: unknown,
  headers: Record<string, string> = ACME,
) => app.inject({ method: 'POST', url: `/v1/runs/${runId}/messages`, headers, payload: payload as object });

describe('POST /v1/runs/:id/messages', () => {
  it("answers 202 with the message's id and logs message.received; an ended run takes none (409)", async () => {
    const { app } = await build();
    const id = await submit(app);
    const sent = await steer(app, id, { content: 'Also check the logs' });
    expect(sent.statusCode, sent.body).toBe(202);
    const { messageId } = sent.json<{ messageId: string }>();
    expect(messageId).toMatch(/^msg_[0-9a-z]{26}$/);
    const events = await runEvents(app, id);
    expect(events.at(-1)).toMatchObject({
      type: 'message.received',
      data: { messageId, content: 'Also check the logs' },
    });

    await endRun(app, id, { status: 'completed', output: 'done' });
    const late = await steer(app, id, { content: 'too late' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ error: { code: 'ERR_RUN_ENDED' } });
    // The message it never took is said so, before the end.
    const after = await runEvents(app, id);
    expect(after.slice(-2).map((event) => event.type)).toEqual(['message.undelivered', 'run.completed']);
  });

  it("refuses another tenant (404), bad bodies (400) and a run's 21st message not taken (409), staying healthy", async () => {
    const { app } = await build();
    const id = await submit(app);
    const other = await steer(app, id, { content: 'x' }, BETA);
    expect([other.statusCode, other.json().error.code]).toEqual([404, 'ERR_RUN_NOT_FOUND']);
    for (const body of [
      {},
      { content: '' },
      { content: 'x'.repeat(STEER_LIMITS.contentMaxLength + 1) },
      { content: 'x', role: 'system' },
    ]) {
      const refused = await steer(app, id, body);
      expect(refused.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
    }
    for (let i = 0; i < STEER_LIMITS.pendingMax; i++) {
      expect((await steer(app, id, { content: `message ${i}` })).statusCode).toBe(202);
    }
    const full = await steer(app, id, { content: 'one more' });
    expect([full.statusCode, full.json().error.code]).toEqual([409, 'ERR_RUN_MESSAGES_LIMIT']);
    expect(await app.store.redis.llen(app.store.keys.run(id).inbox)).toBe(STEER_LIMITS.pendingMax);
    expect(await expectServing(app)).toEqual([id]);
  });
});
