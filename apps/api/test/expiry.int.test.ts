/**
 * Expiry through the API: `expiresAt` or `ttlMs` on `POST /v1/runs` and a session's runs, what is
 * refused (both, bounds, a time not after now, one before `runAt`, not a time), the run showing its
 * `expiresAt`, tenancy, and an expired run shown and listed (`?status=expired`).
 */
import type { Run } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, replayRun, runEvents } from './helper.js';

const HOUR = 3_600_000;
const YEAR = 365 * 24 * HOUR;

function post(app: FastifyInstance, payload: object, url = '/v1/runs') {
  return app.inject({ method: 'POST', url, headers: ACME, payload });
}

async function read(app: FastifyInstance, id: string, headers: Record<string, string> = ACME) {
  return app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers });
}

describe('POST /v1/runs with expiresAt or ttlMs', () => {
  it('creates a run that shows its expiresAt, by either field', async () => {
    const { app } = await build();
    const expiresAt = new Date(Date.now() + HOUR).toISOString();
    const created = await post(app, replayRun(undefined, { expiresAt }));
    expect(created.statusCode).toBe(202);
    expect(created.json()).toMatchObject({ status: 'queued' });
    const { id } = created.json<{ id: string }>();
    expect((await read(app, id)).json()).toMatchObject({ id, status: 'queued', expiresAt });
    const before = Date.now();
    const byTtl = (await post(app, replayRun(undefined, { ttlMs: 60_000 }))).json<{ id: string }>().id;
    const shown = Date.parse((await read(app, byTtl)).json<Run>().expiresAt ?? '');
    expect(shown).toBeGreaterThanOrEqual(before + 60_000);
    expect(shown).toBeLessThan(Date.now() + 60_000 + 1);
    // Another tenant does not see it.
    expect((await read(app, id, BETA)).statusCode).toBe(404);
  });

  it('takes a deadline after a delayed start', async () => {
    const { app } = await build();
    const created = await post(app, replayRun(undefined, { delayMs: HOUR, ttlMs: 2 * HOUR }));
    expect(created.statusCode).toBe(202);
    expect(created.json()).toMatchObject({ status: 'scheduled' });
  });

  it.each([
    [
      'both fields',
      { expiresAt: new Date(Date.now() + HOUR).toISOString(), ttlMs: 60_000 },
      /^body\.expiresAt and body\.ttlMs/,
    ],
    [
      'an expiresAt in the past',
      { expiresAt: new Date(Date.now() - 1_000).toISOString() },
      /^body\.expiresAt/,
    ],
    [
      'an expiresAt more than a year ahead',
      { expiresAt: new Date(Date.now() + YEAR + HOUR).toISOString() },
      /^body\.expiresAt/,
    ],
    ['an expiresAt that is no time', { expiresAt: 'tomorrow' }, /^body\.expiresAt/],
    ['a ttlMs under a second', { ttlMs: 999 }, /^body\.ttlMs/],
    ['a ttlMs over a year', { ttlMs: YEAR + 1 }, /^body\.ttlMs/],
    ['a deadline before runAt', { delayMs: 2 * HOUR, ttlMs: HOUR }, /^body\.ttlMs ends before body\.delayMs/],
    [
      'an expiresAt before runAt',
      {
        runAt: new Date(Date.now() + 2 * HOUR).toISOString(),
        expiresAt: new Date(Date.now() + HOUR).toISOString(),
      },
      /^body\.expiresAt ends before body\.runAt/,
    ],
  ])('refuses %s with 400 naming the field', async (_, fields, message) => {
    const { app } = await build();
    const response = await post(app, replayRun(undefined, fields));
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error.code).toBe('ERR_VALIDATION');
    expect(response.json().error.message).toMatch(message);
  });

  it("takes them on a session's runs too, with the same checks", async () => {
    const { app } = await build();
    const session = (await post(app, {}, '/v1/sessions')).json<{ id: string }>();
    const url = `/v1/sessions/${session.id}/runs`;
    const created = await post(app, replayRun(undefined, { ttlMs: 60_000 }), url);
    expect(created.statusCode).toBe(202);
    const run = (await read(app, created.json<{ id: string }>().id)).json<Run>();
    expect(run.expiresAt).toBeDefined();
    const both = await post(app, replayRun(undefined, { ttlMs: 60_000, expiresAt: run.expiresAt }), url);
    expect(both.statusCode).toBe(400);
    expect(both.json().error.message).toMatch(/^body\.expiresAt and body\.ttlMs/);
  });
});

describe('an expired run', () => {
  it('is shown expired with run.expired last, listed by ?status=expired, for its tenant only', async () => {
    const { app } = await build();
    const id = (await post(app, replayRun(undefined, { ttlMs: 1_000 }))).json<{ id: string }>().id;
    const other = (await post(app, replayRun(undefined, { ttlMs: HOUR }))).json<{ id: string }>().id;
    // No worker here: the engine's sweep (as the worker holding its lease runs it) ends it.
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect(await app.runs.engine.expireDue()).toEqual([id]);
    const run = (await read(app, id)).json<Run>();
    expect(run).toMatchObject({ id, status: 'expired' });
    expect(run.startedAt).toBeUndefined();
    expect(run.finishedAt).toBeDefined();
    const events = await runEvents(app, id);
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['run.queued', {}],
      ['run.expired', { expiresAt: run.expiresAt }],
    ]);
    const listed = await app.inject({ method: 'GET', url: '/v1/runs?status=expired', headers: ACME });
    expect(listed.json<{ data: Run[] }>().data.map((r) => r.id)).toEqual([id]);
    expect((await read(app, other)).json<Run>().status).toBe('queued');
    const beta = await app.inject({ method: 'GET', url: '/v1/runs?status=expired', headers: BETA });
    expect(beta.json<{ data: Run[] }>().data).toEqual([]);
    // Ended: a cancel is 409, a delete removes it.
    const cancel = await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    expect(cancel.statusCode).toBe(409);
    const deleted = await app.inject({ method: 'DELETE', url: `/v1/runs/${id}`, headers: ACME });
    expect(deleted.statusCode).toBe(204);
  });
});
