/** The API's HTTP conventions: CORS (`TETHER_CORS_ORIGINS`) and 405 with `Allow` for a wrong method. */
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ACME, type BuildOptions, build, expectServing } from './helper.js';
import { openSse } from './sse-client.js';

const APP_ORIGIN = 'https://app.example.com';
const DEV_ORIGIN = 'http://localhost:5173';
const CORS_ON = { env: { TETHER_CORS_ORIGINS: `${APP_ORIGIN}, ${DEV_ORIGIN}` } };

/** A browser's preflight of `method` with `headers` from `origin`. */
function preflight(url: string, origin: string, method: string, headers = 'authorization,content-type') {
  return {
    method: 'OPTIONS' as const,
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': headers,
    },
  };
}

/** The response's `access-control-*` headers. */
function corsHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.startsWith('access-control-')));
}

const list = (value: unknown) =>
  String(value)
    .split(',')
    .map((item) => item.trim().toLowerCase());

async function listening(options: BuildOptions = {}) {
  const built = await build(options);
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = built.app.server.address() as AddressInfo;
  return { ...built, base: `http://127.0.0.1:${port}` };
}

describe('CORS', () => {
  it('is off by default: no CORS header on any answer, and OPTIONS is a method like any other (405)', async () => {
    const { app } = await build();
    const read = await app.inject({
      method: 'GET',
      url: '/v1/runs',
      headers: { ...ACME, origin: APP_ORIGIN },
    });
    expect(read.statusCode).toBe(200);
    expect(corsHeaders(read.headers)).toEqual({});
    const options = await app.inject(preflight('/v1/runs', APP_ORIGIN, 'POST'));
    expect(options.statusCode).toBe(405);
    expect(options.headers.allow).toBe('GET, HEAD, POST');
    expect(corsHeaders(options.headers)).toEqual({});
  });

  it("answers a listed origin's preflight 204 with the methods and headers, without a key", async () => {
    const { app } = await build(CORS_ON);
    const answer = await app.inject(
      preflight('/v1/runs', APP_ORIGIN, 'POST', 'authorization,content-type,idempotency-key'),
    );
    expect(answer.statusCode).toBe(204);
    expect(answer.body).toBe('');
    expect(answer.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(answer.headers['access-control-allow-credentials']).toBe('true');
    expect(list(answer.headers['access-control-allow-methods'])).toEqual(
      expect.arrayContaining(['get', 'post', 'put', 'patch', 'delete']),
    );
    expect(list(answer.headers['access-control-allow-headers'])).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'idempotency-key', 'last-event-id']),
    );
    expect(answer.headers['access-control-max-age']).toBe('600');
    expect(list(answer.headers.vary)).toContain('origin');

    // The other origin of the list, on a route with a path parameter and the SSE cursor.
    const events = await app.inject(
      preflight('/v1/runs/run_x/events', DEV_ORIGIN, 'GET', 'authorization,last-event-id'),
    );
    expect(events.statusCode).toBe(204);
    expect(events.headers['access-control-allow-origin']).toBe(DEV_ORIGIN);
    // Preflights are not requests of the tenant: none of them was counted or refused.
    await expectServing(app);
  });

  it("lets a listed origin's page read answers, errors too, and the headers a client needs", async () => {
    const { app } = await build(CORS_ON);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: { ...ACME, origin: APP_ORIGIN, 'idempotency-key': 'cors-1' },
      payload: { input: 'x', model: { provider: 'replay', script: [{ content: 'ok' }] } },
    });
    expect(created.statusCode).toBe(202);
    expect(created.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(list(created.headers['access-control-expose-headers'])).toEqual(
      expect.arrayContaining([
        'location',
        'retry-after',
        'idempotent-replayed',
        'x-request-id',
        'x-ratelimit-remaining',
        'content-disposition',
      ]),
    );
    // A 401 is readable too, so the page can tell its user why.
    const refused = await app.inject({ method: 'GET', url: '/v1/runs', headers: { origin: APP_ORIGIN } });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(refused.json()).toMatchObject({ error: { code: 'ERR_UNAUTHORIZED' } });
  });

  it('gives an origin not listed, and a request without Origin, no CORS header at all', async () => {
    const { app } = await build(CORS_ON);
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.example', 'null']) {
      const read = await app.inject({ method: 'GET', url: '/v1/runs', headers: { ...ACME, origin } });
      expect(read.statusCode).toBe(200);
      expect(corsHeaders(read.headers)).toEqual({});
      const answer = await app.inject(preflight('/v1/runs', origin, 'POST'));
      expect(answer.statusCode).toBe(405);
      expect(corsHeaders(answer.headers)).toEqual({});
    }
    const plain = await app.inject({ method: 'GET', url: '/v1/runs', headers: ACME });
    expect(corsHeaders(plain.headers)).toEqual({});
    // OPTIONS that is no preflight: the path's methods (405), or 404 for a path that does not exist.
    const options = await app.inject({ method: 'OPTIONS', url: '/v1/runs' });
    expect(options.statusCode).toBe(405);
    expect(options.headers.allow).toBe('GET, HEAD, POST');
    const unknown = await app.inject({ method: 'OPTIONS', url: '/v1/nope' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'ERR_NOT_FOUND' } });
  });

  it('with *, allows every origin without credentials', async () => {
    const { app } = await build({ env: { TETHER_CORS_ORIGINS: '*' } });
    const answer = await app.inject(preflight('/v1/runs', 'https://anyone.example', 'POST'));
    expect(answer.statusCode).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe('*');
    expect(answer.headers['access-control-allow-credentials']).toBeUndefined();
    const read = await app.inject({
      method: 'GET',
      url: '/v1/runs',
      headers: { ...ACME, origin: 'https://anyone.example' },
    });
    expect(read.headers['access-control-allow-origin']).toBe('*');
    expect(read.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it("serves the documented EventSource from another origin: the SSE stream with the read token carries the origin's headers", async () => {
    const { app, base } = await listening(CORS_ON);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: { input: 'x', model: { provider: 'replay', script: [{ content: 'ok' }] } },
    });
    const { id, token } = created.json<{ id: string; token: string }>();
    // What EventSource sends: a simple GET (no preflight), Origin, Accept, and no credentials.
    const stream = await openSse(`${base}/v1/runs/${id}/events?token=${encodeURIComponent(token)}`, {
      origin: APP_ORIGIN,
    });
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(stream.headers['access-control-allow-credentials']).toBe('true');
    await stream.waitFor((event) => event.type === 'run.queued');
    stream.close();
  });
});

describe('405 Method Not Allowed', () => {
  it('answers a wrong method on an existing path 405 with Allow, in the error shape, without a key', async () => {
    const { app } = await build();
    const cases: [method: 'PATCH' | 'GET' | 'PUT' | 'DELETE' | 'POST', url: string, allow: string][] = [
      ['PATCH', '/v1/runs', 'GET, HEAD, POST'],
      ['PATCH', '/v1/runs/', 'GET, HEAD, POST'],
      ['GET', '/v1/runs/run_x/cancel', 'POST'],
      ['PUT', '/v1/tools?verbose=1', 'GET, HEAD'],
      ['DELETE', '/v1/runs/run_x/files/src/a.txt', 'GET, HEAD'],
      ['POST', '/v1/skills/deploy', 'GET, HEAD, PUT, DELETE'],
      ['POST', '/healthz', 'GET, HEAD'],
    ];
    for (const [method, url, allow] of cases) {
      const answer = await app.inject({ method, url });
      expect(answer.statusCode, `${method} ${url}`).toBe(405);
      expect(answer.headers.allow, `${method} ${url}`).toBe(allow);
      const path = url.split('?')[0];
      expect(answer.json()).toEqual({
        error: {
          code: 'ERR_METHOD_NOT_ALLOWED',
          message: `${method} is not allowed on ${path}; it allows ${allow} (see Allow).`,
        },
      });
    }
    await expectServing(app);
  });

  it('keeps 404 for a path that does not exist, whatever the method', async () => {
    const { app } = await build();
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const answer = await app.inject({ method, url: '/v1/nope', headers: ACME });
      expect(answer.statusCode).toBe(404);
      expect(answer.headers.allow).toBeUndefined();
      expect(answer.json()).toMatchObject({ error: { code: 'ERR_NOT_FOUND' } });
    }
  });
});
