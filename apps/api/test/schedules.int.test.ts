/**
 * `/v1/schedules` through the API alone (no worker): a schedule added, read, changed, paused,
 * resumed and deleted, with its BullMQ job scheduler following; each bad field a 400 naming it;
 * the tenant's limit and a taken name; another tenant's 404 on every route; read and session
 * tokens refused. The firings are the worker's (apps/worker/test/schedules.int.test.ts).
 */

import type { Schedule, ScheduleList } from '@tether/protocol';
import { schedulerId } from '@tether/store/schedules';
import type { FastifyInstance } from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { ACME, BETA, build, replayRun } from './helper.js';

let app: FastifyInstance;

const call = (
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: object,
  headers: Record<string, string> = ACME,
) => app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });

const body = (extra: object = {}) => ({ name: 'nightly', cron: '0 3 * * *', run: replayRun(), ...extra });

describe('/v1/schedules', () => {
  beforeAll(async () => {
    // One API for the file; a low limit so that it is reached.
    ({ app } = await build({
      keepOpen: true,
      env: { TETHER_TENANT_MAX_SCHEDULES: '3', TETHER_SCHEDULE_MIN_INTERVAL_MS: '2000' },
    }));
    return () => app.close();
  });

  it('is added with its job scheduler, read, changed, paused, resumed and deleted', async () => {
    const created = await call('POST', '/v1/schedules', body({ timezone: 'Europe/Paris' }));
    expect(created.statusCode, created.body).toBe(201);
    expect(created.headers.location).toBe('/v1/schedules/nightly');
    const schedule = created.json<Schedule>();
    expect(schedule).toMatchObject({
      id: 'sch_nightly',
      name: 'nightly',
      cron: '0 3 * * *',
      timezone: 'Europe/Paris',
      overlap: 'skip',
      catchUp: 'one',
      paused: false,
      lastRunAt: null,
      lastStatus: null,
    });
    // 03:00 in Paris is 01:00 or 02:00 UTC, within a day.
    const next = Date.parse(schedule.nextRunAt ?? '');
    expect(next).toBeGreaterThan(Date.now());
    expect(next - Date.now()).toBeLessThanOrEqual(86_400_000);
    expect([1, 2]).toContain(new Date(next).getUTCHours());
    const scheduler = await app.schedules.queue.getJobScheduler(schedulerId('acme', 'nightly'));
    expect(scheduler).toMatchObject({ pattern: '0 3 * * *', tz: 'Europe/Paris', next });

    expect((await call('GET', '/v1/schedules/nightly')).json()).toEqual(schedule);
    expect((await call('GET', '/v1/schedules')).json<ScheduleList>().data.map((s) => s.name)).toEqual([
      'nightly',
    ]);

    // `every` replaces `cron`; the job scheduler follows.
    const changed = await call('PATCH', '/v1/schedules/nightly', { every: '15m', overlap: 'enqueue' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json<Schedule>()).toMatchObject({ every: '15m', overlap: 'enqueue' });
    expect(changed.json<Schedule>().cron).toBeUndefined();
    expect(await app.schedules.queue.getJobScheduler(schedulerId('acme', 'nightly'))).toMatchObject({
      every: 900_000,
    });

    const paused = await call('POST', '/v1/schedules/nightly/pause');
    expect(paused.json<Schedule>()).toMatchObject({ paused: true, nextRunAt: null });
    expect(await app.schedules.queue.getJobScheduler(schedulerId('acme', 'nightly'))).toBeUndefined();
    expect(await app.schedules.queue.getDelayedCount()).toBe(0);
    const resumed = await call('POST', '/v1/schedules/nightly/resume');
    expect(resumed.json<Schedule>().paused).toBe(false);
    expect(Date.parse(resumed.json<Schedule>().nextRunAt ?? '')).toBeGreaterThan(Date.now());
    expect(await app.schedules.queue.getDelayedCount()).toBe(1);

    // A trigger is a job in the schedules queue; its run is made by a worker.
    const triggered = await call('POST', '/v1/schedules/nightly/trigger');
    expect(triggered.statusCode, triggered.body).toBe(202);
    expect(triggered.json<{ runId: string }>().runId).toMatch(/^run_[0-9a-z]{26}$/);
    expect(await app.schedules.queue.getWaitingCount()).toBe(1);
    expect((await call('GET', '/v1/schedules/nightly/runs')).json()).toEqual({ data: [], nextCursor: null });

    expect((await call('DELETE', '/v1/schedules/nightly')).statusCode).toBe(204);
    expect((await call('GET', '/v1/schedules/nightly')).statusCode).toBe(404);
    expect(await app.schedules.queue.getJobScheduler(schedulerId('acme', 'nightly'))).toBeUndefined();
    expect(await app.schedules.queue.getDelayedCount()).toBe(0);
    await app.schedules.queue.drain();
  });

  it('refuses each bad field with a 400 naming it', async () => {
    const cases: [object, string, RegExp][] = [
      [body({ every: '1m' }), 'ERR_SCHEDULE_INVALID', /body\.cron, body\.every/],
      [{ name: 'x', run: replayRun() }, 'ERR_SCHEDULE_INVALID', /body\.cron, body\.every/],
      [body({ timezone: 'Mars/Olympus' }), 'ERR_SCHEDULE_INVALID', /body\.timezone.*Mars\/Olympus/],
      [body({ cron: 'every day' }), 'ERR_SCHEDULE_INVALID', /body\.cron/],
      [body({ cron: '* * * * * *' }), 'ERR_SCHEDULE_INVALID', /body\.cron: ticks 1000 ms apart.*2000 ms/],
      [body({ cron: undefined, every: '1s' }), 'ERR_SCHEDULE_INVALID', /body\.every: ticks 1000 ms apart/],
      [body({ cron: undefined, every: '15 minutes' }), 'ERR_VALIDATION', /body\/every|body\.every/],
      [body({ name: 'Bad Name' }), 'ERR_VALIDATION', /name/],
      [body({ name: 'x'.repeat(64) }), 'ERR_VALIDATION', /name/],
      [body({ overlap: 'sometimes' }), 'ERR_VALIDATION', /overlap/],
      [body({ catchUp: 'all' }), 'ERR_VALIDATION', /catchUp/],
      [body({ extra: 1 }), 'ERR_VALIDATION', /extra/],
      [body({ run: { input: '' } }), 'ERR_VALIDATION', /run/],
      // The run is checked as POST /v1/runs checks it.
      [body({ run: replayRun(undefined, { toolsets: ['nope'] }) }), 'ERR_TOOLSET_UNKNOWN', /nope/],
      [body({ run: { input: 'hi', model: { profile: 'missing' } } }), 'ERR_MODEL_PROFILE_UNKNOWN', /missing/],
      [body({ sessionId: 'ses_00000000000000000000000000' }), 'ERR_SESSION_NOT_FOUND', /ses_/],
    ];
    for (const [payload, code, message] of cases) {
      const response = await call('POST', '/v1/schedules', payload);
      expect(response.json(), JSON.stringify(payload)).toMatchObject({ error: { code } });
      expect(response.json<{ error: { message: string } }>().error.message).toMatch(message);
    }
    // Second-resolution cron passes at this server's 2 s minimum.
    expect(
      (await call('POST', '/v1/schedules', body({ name: 'fast', cron: '*/2 * * * * *' }))).statusCode,
    ).toBe(201);
    const patched = await call('PATCH', '/v1/schedules/fast', { every: '999s', cron: '* * * * *' });
    expect(patched.json()).toMatchObject({ error: { code: 'ERR_SCHEDULE_INVALID' } });
    expect((await call('PATCH', '/v1/schedules/fast', {})).json()).toMatchObject({
      error: { code: 'ERR_VALIDATION' },
    });
    expect((await call('DELETE', '/v1/schedules/fast')).statusCode).toBe(204);
    expect(await app.schedules.list('acme')).toEqual([]);
  });

  it('keeps to the tenant: its limit, its names, 404 for another tenant, no tokens', async () => {
    for (const name of ['a', 'b', 'c']) {
      expect((await call('POST', '/v1/schedules', body({ name }))).statusCode).toBe(201);
    }
    const taken = await call('POST', '/v1/schedules', body({ name: 'a' }), BETA);
    expect(taken.statusCode, 'names are per tenant').toBe(201);
    const duplicate = await call('POST', '/v1/schedules', body({ name: 'b' }), BETA);
    expect(duplicate.statusCode).toBe(201);
    expect((await call('POST', '/v1/schedules', body({ name: 'a' }), BETA)).json()).toMatchObject({
      error: { code: 'ERR_SCHEDULE_EXISTS' },
    });
    const over = await call('POST', '/v1/schedules', body({ name: 'd' }));
    expect(over.statusCode).toBe(409);
    expect(over.json()).toMatchObject({ error: { code: 'ERR_SCHEDULE_LIMIT' } });
    expect(over.json<{ error: { message: string } }>().error.message).toMatch(/TETHER_TENANT_MAX_SCHEDULES/);

    // acme's `c` is not beta's.
    for (const [method, url, payload] of [
      ['GET', '/v1/schedules/c'],
      ['PATCH', '/v1/schedules/c', { overlap: 'enqueue' }],
      ['DELETE', '/v1/schedules/c'],
      ['POST', '/v1/schedules/c/pause'],
      ['POST', '/v1/schedules/c/resume'],
      ['POST', '/v1/schedules/c/trigger'],
      ['GET', '/v1/schedules/c/runs'],
    ] as const) {
      const response = await call(method, url, payload, BETA);
      expect(response.statusCode, `${method} ${url}`).toBe(404);
      expect(response.json()).toMatchObject({ error: { code: 'ERR_SCHEDULE_NOT_FOUND' } });
    }
    expect(
      (await call('GET', '/v1/schedules', undefined, BETA)).json<ScheduleList>().data.map((s) => s.name),
    ).toEqual(['a', 'b']);
    expect((await call('GET', '/v1/schedules/c')).json<Schedule>().overlap).toBe('skip');

    // A run's read token and a session's token are not keys.
    const accepted = await call('POST', '/v1/runs', replayRun());
    const readToken = accepted.json<{ token: string }>().token;
    const session = await call('POST', '/v1/sessions', {});
    const sessionToken = session.json<{ token: string }>().token;
    for (const [method, url] of [
      ['GET', '/v1/schedules'],
      ['POST', '/v1/schedules'],
      ['GET', '/v1/schedules/a'],
      ['POST', '/v1/schedules/a/trigger'],
    ] as const) {
      for (const attempt of [
        { url: `${url}?token=${readToken}` },
        { url, headers: { authorization: `Bearer ${sessionToken}` } },
      ]) {
        const response = await app.inject({
          method,
          ...attempt,
          ...(method === 'POST' ? { payload: body() } : {}),
        });
        expect([400, 401], `${method} ${attempt.url}`).toContain(response.statusCode);
      }
    }
    for (const name of ['a', 'b', 'c']) await call('DELETE', `/v1/schedules/${name}`);
    for (const name of ['a', 'b']) await call('DELETE', `/v1/schedules/${name}`, undefined, BETA);
    expect(await app.schedules.queue.getJobSchedulersCount()).toBe(0);
  });
});
