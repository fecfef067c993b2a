/**
 * Delayed runs through the API: `runAt` or `delayMs` on `POST /v1/runs` and a session's runs, what
 * is refused (both, more than a year ahead, not a time), `PATCH /v1/runs/:id` (a new time; 404 for
 * another tenant, 409 once not scheduled), and cancel and delete while scheduled.
 */
import type { Run } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, replayRun, runEvents, submit } from './helper.js';

const HOUR = 3_600_000;
const YEAR = 365 * 24 * HOUR;

function post(app: FastifyInstance, payload: object, url = '/v1/runs') {
  return app.inject({ method: 'POST', url, headers: ACME, payload });
}

function patch(app: FastifyInstance, id: string, payload: object, headers: Record<string, string> = ACME) {
  return app.inject({ method: 'PATCH', url: `/v1/runs/${id}`, headers, payload });
}

async function read(app: FastifyInstance, id: string): Promise<Run> {
  return (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
}

describe('POST /v1/runs with runAt or delayMs', () => {
  it('creates a scheduled run, shown and listed as such', async () => {
    const { app } = await build();
    const runAt = new Date(Date.now() + HOUR).toISOString();
    const created = await post(app, replayRun(undefined, { runAt }));
    expect(created.statusCode).toBe(202);
    expect(created.json()).toMatchObject({ status: 'scheduled' });
    const { id } = created.json<{ id: string }>();
    expect(await read(app, id)).toMatchObject({ id, status: 'scheduled', runAt });
    const byDelay = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    const now = await submit(app);
    const listed = await app.inject({ method: 'GET', url: '/v1/runs?status=scheduled', headers: ACME });
    expect(listed.json<{ data: Run[] }>().data.map((run) => run.id)).toEqual([byDelay, id]);
    expect((await read(app, now)).status).toBe('queued');
    expect((await runEvents(app, id)).map((e) => [e.type, e.data])).toEqual([['run.scheduled', { runAt }]]);
  });

  it('starts a run whose runAt has passed at once', async () => {
    const { app } = await build();
    const created = await post(
      app,
      replayRun(undefined, { runAt: new Date(Date.now() - HOUR).toISOString() }),
    );
    expect(created.json()).toMatchObject({ status: 'queued' });
    expect((await read(app, created.json<{ id: string }>().id)).status).toBe('queued');
  });

  it.each([
    [
      'both fields',
      { runAt: new Date(Date.now() + HOUR).toISOString(), delayMs: 1_000 },
      /body\.runAt and body\.delayMs/,
    ],
    [
      'runAt more than a year ahead',
      { runAt: new Date(Date.now() + YEAR + HOUR).toISOString() },
      /body\.runAt/,
    ],
    ['delayMs more than a year', { delayMs: YEAR + 1 }, /body\.delayMs/],
    ['runAt that is no time', { runAt: 'next tuesday' }, /body\.runAt/],
    ['a negative delayMs', { delayMs: -1 }, /body\.delayMs/],
  ])('refuses %s with 400 naming the field', async (_, timing, field) => {
    const { app } = await build();
    const response = await post(app, replayRun(undefined, timing));
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('ERR_VALIDATION');
    expect(response.json().error.message).toMatch(field);
  });

  it("takes them on a session's runs too", async () => {
    const { app } = await build();
    const session = (await post(app, {}, '/v1/sessions')).json<{ id: string }>();
    const created = await post(
      app,
      replayRun(undefined, { delayMs: HOUR }),
      `/v1/sessions/${session.id}/runs`,
    );
    expect(created.statusCode).toBe(202);
    expect(created.json()).toMatchObject({ status: 'scheduled', sessionId: session.id });
    const both = await post(
      app,
      replayRun(undefined, { delayMs: HOUR, runAt: new Date().toISOString() }),
      `/v1/sessions/${session.id}/runs`,
    );
    expect(both.statusCode).toBe(400);
  });
});

describe('PATCH /v1/runs/:id', () => {
  it('gives a scheduled run a new time: 200 with the run, and run.scheduled', async () => {
    const { app } = await build();
    const id = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    const runAt = new Date(Date.now() + 2 * HOUR).toISOString();
    const moved = await patch(app, id, { runAt });
    expect(moved.statusCode).toBe(200);
    expect(moved.json()).toMatchObject({ id, status: 'scheduled', runAt });
    const byDelay = await patch(app, id, { delayMs: 3 * HOUR });
    expect(Date.parse(byDelay.json<Run>().runAt ?? '')).toBeGreaterThan(Date.parse(runAt));
    const events = await runEvents(app, id);
    expect(events.map((e) => e.type)).toEqual(['run.scheduled', 'run.scheduled', 'run.scheduled']);
    expect(events[1]?.data).toEqual({ runAt });
  });

  it("is 404 for another tenant's run, and changes nothing", async () => {
    const { app } = await build();
    const id = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    const before = await read(app, id);
    const response = await patch(app, id, { delayMs: 1_000 }, BETA);
    expect(response.statusCode).toBe(404);
    expect(response.json().error.code).toBe('ERR_RUN_NOT_FOUND');
    expect(await read(app, id)).toEqual(before);
  });

  it('is 409 ERR_RUN_NOT_SCHEDULED for a run queued, or cancelled', async () => {
    const { app } = await build();
    const queued = await submit(app);
    const response = await patch(app, queued, { delayMs: 1_000 });
    expect(response.statusCode).toBe(409);
    expect(response.json().error).toMatchObject({ code: 'ERR_RUN_NOT_SCHEDULED' });
    expect(response.json().error.message).toContain('queued');
    const id = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    expect((await patch(app, id, { delayMs: 1_000 })).statusCode).toBe(409);
  });

  it.each([
    ['no field', {}, /body: give runAt/],
    ['both fields', { delayMs: 1, runAt: new Date().toISOString() }, /body\.runAt and body\.delayMs/],
    ['an unknown field', { when: 'now' }, /when/],
    [
      'runAt more than a year ahead',
      { runAt: new Date(Date.now() + YEAR + HOUR).toISOString() },
      /body\.runAt/,
    ],
  ])('is 400 for %s', async (_, payload, field) => {
    const { app } = await build();
    const id = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    const response = await patch(app, id, payload);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toMatch(field);
  });
});

describe('a scheduled run', () => {
  it('is cancelled at once (202 with status scheduled), then ended cancelled', async () => {
    const { app } = await build();
    const id = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    const cancelled = await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    expect(cancelled.statusCode).toBe(202);
    expect(cancelled.json()).toEqual({ id, status: 'scheduled' });
    expect((await read(app, id)).status).toBe('cancelled');
    expect(await app.runs.getJob(id)).toBeUndefined();
  });

  it('is deleted (204), its job with it', async () => {
    const { app } = await build();
    const id = (await post(app, replayRun(undefined, { delayMs: HOUR }))).json<{ id: string }>().id;
    const deleted = await app.inject({ method: 'DELETE', url: `/v1/runs/${id}`, headers: ACME });
    expect(deleted.statusCode).toBe(204);
    expect((await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).statusCode).toBe(404);
    expect(await app.runs.getJob(id)).toBeUndefined();
  });
});
