/**
 * The WebSocket gateway's limits end to end, over real ports: API processes on
 * the test Redis (a Redis Cluster in the `cluster` project) and real `ws`
 * clients. Bad frames and a frame over the size limit, the tenant's rate limit
 * counted per frame, frames per second per socket, a flood of large frames
 * with memory bounded, sockets per tenant, missed pings and shutdown; an API in
 * process dropping a socket that does not read, and counting failed upgrades
 * toward the address's failed-authentication limit. The rest of the gateway is
 * in ws.int.test.ts; what both share is in ws-harness.ts.
 */
import { readFileSync } from 'node:fs';
import type { Run } from '@tether/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ACME, API_KEYS, BETA, endRun } from './helper.js';
import { call, startApi, stopAll } from './processes.js';
import { openWs } from './ws-client.js';
import {
  ASKS,
  cleanups,
  delta,
  ids,
  listening,
  log,
  ofType,
  replay,
  sessionRun,
  setup,
  socket,
  WORKER,
  wsUrl,
} from './ws-harness.js';

afterEach(async (context) => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await stopAll(context);
});

/** A process's resident memory, from /proc. */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
}

describe('the WebSocket gateway', () => {
  it('answers bad frames with error frames and stays open; closes a frame over the limit with 1009', async () => {
    const env = await setup();
    const [api] = await Promise.all([startApi(env, API_KEYS, 'api', { TETHER_WS_MAX_FRAME_BYTES: '4096' })]);
    const client = await socket(api.base);
    const { id: sessionId } = (await call<{ id: string }>(api.base, 'POST', '/v1/sessions')).body;
    const bad: [unknown, string, RegExp][] = [
      ['not json', 'ERR_WS_FRAME', /not valid JSON/],
      ['[1]', 'ERR_WS_FRAME', /JSON object/],
      [
        { type: 'shout' },
        'ERR_WS_FRAME',
        /frame\.type must be one of message, clarify_response, tool_response, approval_response, steer, subscribe, cancel, ping/,
      ],
      [{ sessionId }, 'ERR_WS_FRAME', /frame\.type/],
      [{ type: 'subscribe', sessionId }, 'ERR_WS_FRAME', /frame\.after is required/],
      [{ type: 'cancel' }, 'ERR_WS_FRAME', /frame\.sessionId is required/],
      [{ type: 'ping', extra: 1 }, 'ERR_WS_FRAME', /frame\.extra is not a known field/],
      [{ type: 'subscribe', sessionId, after: 'nope' }, 'ERR_WS_FRAME', /frame\.after/],
      [{ type: 'message', sessionId, content: '' }, 'ERR_WS_FRAME', /frame\.content/],
      [
        { type: 'message', sessionId, content: 'hi', options: { multitask: 'sometimes' } },
        'ERR_VALIDATION',
        /frame\.options\.multitask must be one of "enqueue", "reject", "interrupt", "steer"/,
      ],
      [
        { type: 'message', sessionId, content: 'hi', options: { input: 'x' } },
        'ERR_VALIDATION',
        /frame\.options\.input/,
      ],
      [
        {
          type: 'message',
          sessionId,
          content: 'hi',
          options: {
            model: { provider: 'replay', script: [{ content: 'ok' }, { toolCalls: [{ arguments: {} }] }] },
          },
        },
        'ERR_MODEL_REPLAY_SCRIPT_INVALID',
        /frame\.options\.model\.script\[1\]\.toolCalls\[0\]\.name/,
      ],
      [
        {
          type: 'message',
          sessionId: null,
          content: 'hi',
          options: { toolsets: ['nope'], model: replay({ content: 'x' }) },
        },
        'ERR_TOOLSET_UNKNOWN',
        /nope/,
      ],
      [
        { type: 'clarify_response', sessionId, requestId: 'clr_00000000000000000000000000', answer: 'x' },
        'ERR_CLARIFY_UNKNOWN',
        /clr_0/,
      ],
    ];
    for (const [frame, code, message] of bad) {
      const from = client.frames.length;
      client.send(frame);
      const error = await client.waitFor(ofType('error'), { from });
      expect(error, JSON.stringify(frame)).toEqual({
        type: 'error',
        code,
        message: expect.stringMatching(message),
      });
    }
    client.socket.send(Buffer.from('{"type":"ping"}'), { binary: true });
    expect(await client.waitFor(ofType('error'), { from: client.frames.length })).toMatchObject({
      code: 'ERR_WS_FRAME',
    });
    await client.roundTrip();
    // Nothing was created by the refused messages.
    const sessions = await call<{ data: unknown[] }>(api.base, 'GET', '/v1/sessions');
    expect(sessions.body.data).toHaveLength(1);
    // A frame over TETHER_WS_MAX_FRAME_BYTES closes the socket with 1009; the server serves the next.
    client.send({ type: 'ping', padding: 'x'.repeat(5_000) });
    expect((await client.closed).code).toBe(1009);
    const next = await socket(api.base);
    await next.roundTrip();
  });

  it("counts frames against the tenant's rate limit: past it each is refused with ERR_RATE_LIMITED and retryAfterMs, and the socket stays open", async () => {
    const env = await setup();
    // A window of an hour, so that the count never straddles two windows.
    const window = { TETHER_RATE_LIMIT_MAX: '5', TETHER_RATE_LIMIT_WINDOW_MS: '3600000' };
    // Another API on the same Redis counts in windows of its own (a key per window length): it reads.
    const [api, reader] = await Promise.all([
      startApi(env, API_KEYS, 'api', window),
      startApi(env, API_KEYS, 'reader', {
        TETHER_RATE_LIMIT_MAX: '1000',
        TETHER_RATE_LIMIT_WINDOW_MS: '1000',
      }),
    ]);
    // The upgrade is the tenant's first request: four frames are left.
    const client = await socket(api.base);
    const frames = 44;
    for (let i = 0; i < frames; i++) {
      client.send({ type: 'message', sessionId: null, content: `message ${i}`, options: { model: ASKS } });
    }
    await client.roundTrip();
    expect(client.ofType('session')).toHaveLength(4);
    expect(client.ofType('run_started')).toHaveLength(4);
    const refused = client.ofType('error');
    expect(refused).toHaveLength(frames - 4);
    for (const error of refused) {
      expect(error).toEqual({
        type: 'error',
        code: 'ERR_RATE_LIMITED',
        message: expect.stringMatching(/at most 5 requests per 3600 s; retry in \d+ s/),
        retryAfterMs: expect.any(Number),
      });
      expect(error.retryAfterMs).toBeGreaterThan(0);
      expect(error.retryAfterMs).toBeLessThanOrEqual(3_600_000);
    }
    // Every frame that changes something counts, not only message: each is refused alike.
    const sessionId = (client.ofType('session')[0] as { sessionId: string }).sessionId;
    const requestId = 'clr_00000000000000000000000000';
    const others = [
      { type: 'subscribe', sessionId, after: null },
      { type: 'clarify_response', sessionId, requestId, answer: 'red' },
      { type: 'tool_response', sessionId, requestId: 'tcr_00000000000000000000000000', output: 'x' },
      { type: 'cancel', sessionId },
    ];
    for (const frame of others) {
      const from = client.frames.length;
      client.send(frame);
      expect(await client.waitFor(ofType('error'), { from }), frame.type).toMatchObject({
        code: 'ERR_RATE_LIMITED',
      });
    }
    // Nothing refused was done: four sessions of one run each, and their runs still wait to start.
    const sessions = await call<{ data: unknown[] }>(reader.base, 'GET', '/v1/sessions?limit=100');
    expect(sessions.body.data).toHaveLength(4);
    const runs = await call<{ data: Run[] }>(reader.base, 'GET', '/v1/runs?limit=100');
    expect(runs.body.data.map((run) => run.status)).toEqual(['queued', 'queued', 'queued', 'queued']);
    // The socket is open and served (a ping is not counted), and the tenant's REST requests are limited too.
    await client.roundTrip();
    expect((await call(api.base, 'GET', '/v1/runs')).status).toBe(429);
    // Another tenant has a count of its own.
    const beta = await socket(api.base, BETA);
    beta.send({ type: 'message', sessionId: null, content: 'hi', options: { model: ASKS } });
    await beta.waitFor(ofType('run_started'));
  });

  it('closes a socket that sends more than TETHER_WS_MAX_FRAMES_PER_SECOND frames in a second with 1008', async () => {
    const env = await setup();
    const api = await startApi(env, API_KEYS, 'api', { TETHER_WS_MAX_FRAMES_PER_SECOND: '5' });
    const calm = await socket(api.base);
    const flood = await socket(api.base);
    for (let i = 0; i < 20; i++) flood.send({ type: 'ping' });
    expect(await flood.closed).toEqual({ code: 1008, reason: 'too many frames: at most 5 per second' });
    expect(flood.ofType('pong').length).toBeLessThanOrEqual(5);
    // Other sockets of the tenant, and new ones, are served.
    await calm.roundTrip();
    const next = await socket(api.base);
    await next.roundTrip();
  });

  it('bounds a flood of large frames with a session token: runs no more than the limit, memory bounded', async () => {
    const env = await setup();
    const api = await startApi(env, API_KEYS, 'api', {
      TETHER_RATE_LIMIT_MAX: '20',
      TETHER_RATE_LIMIT_WINDOW_MS: '3600000',
      // The tenant's limit is what this test measures, not the socket's cap per second.
      TETHER_WS_MAX_FRAMES_PER_SECOND: '100000',
    });
    const reader = await startApi(env, API_KEYS, 'reader', {
      TETHER_RATE_LIMIT_MAX: '1000',
      TETHER_RATE_LIMIT_WINDOW_MS: '1000',
    });
    const created = await call<{ id: string; token: string }>(api.base, 'POST', '/v1/sessions', {
      defaults: { model: replay({ content: 'ok' }) },
    });
    const { id: sessionId, token } = created.body;
    const rssBefore = rssBytes(api.child.pid as number);
    // A session token, as a browser holds it: the upgrade and the session's creation were two requests.
    const client = await socket(api.base, {}, `?token=${encodeURIComponent(token)}`);
    const content = 'x'.repeat(200_000);
    const frames = 300;
    for (let i = 0; i < frames; i++) client.send({ type: 'message', sessionId, content });
    await client.roundTrip();
    const rssAfter = rssBytes(api.child.pid as number);
    expect(client.ofType('run_started')).toHaveLength(18);
    expect(client.ofType('error').filter((error) => error.code === 'ERR_RATE_LIMITED')).toHaveLength(
      frames - 18,
    );
    const runs = await call<{ data: Run[] }>(reader.base, 'GET', '/v1/runs?limit=100');
    expect(runs.body.data).toHaveLength(18);
    // Every frame queued unserved, as before the socket stopped reading at 8, the same flood took the
    // API's resident memory up by about 190 MB here; bounded, by 45 to 85 MB (garbage not yet collected).
    expect(rssAfter - rssBefore).toBeLessThan(130 * 1024 * 1024);
  });

  it('limits sockets per tenant, cuts sockets that miss a ping, and closes with 1001 at shutdown', async () => {
    const env = await setup();
    const api = await startApi(env, API_KEYS, 'api', {
      TETHER_WS_MAX_PER_TENANT: '2',
      TETHER_WS_HEARTBEAT_MS: '300',
    });
    const one = await socket(api.base);
    const two = await socket(api.base);
    const three = await openWs(wsUrl(api.base), ACME);
    const refused = await three.closed;
    expect(refused.code).toBe(1013);
    expect(refused.reason).toMatch(/2 sockets/);
    // Another tenant has its own count.
    const beta = await socket(api.base, BETA);
    await beta.roundTrip();
    // A slot freed is a slot taken.
    two.close();
    await two.closed;
    const again = await socket(api.base);
    await again.roundTrip();
    const metrics = await fetch(`${api.base}/metrics`);
    expect(await metrics.text()).toContain('tether_ws_clients 3');

    // A client that never answers protocol pings is cut; the others (ws answers them) stay.
    const deaf = await openWs(wsUrl(api.base), BETA, { autoPong: false });
    expect((await deaf.closed).code).toBe(1006);
    await one.roundTrip();

    const stopping = api.stop();
    for (const connection of [one, again, beta]) expect((await connection.closed).code).toBe(1001);
    await stopping;
  });
});

describe('the WebSocket gateway, in process', () => {
  it('drops a socket that does not read (1013); one that keeps up gets everything, and the dropped one resumes', async () => {
    const { app, base } = await listening({ env: { TETHER_SSE_MAX_BUFFER_BYTES: '262144' } });
    const { sessionId, runId } = await sessionRun(app);
    const slow = await socket(base);
    const fast = await socket(base);
    for (const connection of [slow, fast]) {
      connection.send({ type: 'subscribe', sessionId, after: null });
      await connection.waitFor(ofType('event', (frame) => frame.event.type === 'run.started'));
    }
    slow.socket.pause();
    const chunk = 'x'.repeat(16 * 1024);
    // Until the slow socket is dropped: it takes more than the socket buffers of both ends hold.
    let appended = 0;
    for (; appended < 4_000 && app.sockets.size === 2; appended++)
      await app.store.append(runId, delta(chunk), WORKER);
    await vi.waitFor(() => expect(app.sockets.size).toBe(1));
    await endRun(app, runId, { status: 'completed', output: 'done' }, WORKER);
    await fast.waitFor(ofType('done'));
    const all = await log(app, runId);
    expect(ids(fast)).toEqual(all);
    slow.socket.resume();
    expect((await slow.closed).code).toBe(1013);
    expect(ids(slow).length).toBeLessThan(all.length);
    const back = await socket(base);
    back.send({ type: 'subscribe', sessionId, after: ids(slow).at(-1) });
    await back.waitFor(ofType('done'));
    expect([...ids(slow), ...ids(back)]).toEqual(all);
  });

  it('counts failed upgrades toward the failed-authentication limit of the address', async () => {
    // A window of an hour: the failures never straddle two windows (as a minute's may, now and then).
    const { base } = await listening({
      env: { TETHER_AUTH_FAIL_LIMIT: '2', TETHER_AUTH_FAIL_WINDOW_MS: '3600000' },
    });
    for (let i = 0; i < 3; i++) {
      const refused = await openWs(wsUrl(base), { authorization: 'Bearer sk_nobody_0123456789' });
      expect(await refused.closed).toEqual({ code: 1008, reason: expect.stringMatching(/authentication/) });
    }
    // The address is limited now: a right key is refused too, over REST and on the gateway.
    expect((await fetch(`${base}/v1/runs`, { headers: ACME })).status).toBe(429);
    const limited = await openWs(wsUrl(base), ACME);
    expect(await limited.closed).toEqual({
      code: 1008,
      reason: 'too many failed authentications from this address',
    });
  });
});
