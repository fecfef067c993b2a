import type { AddressInfo } from 'node:net';
import type { RunEvent } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { ACME, BETA, type BuildOptions, build, endRun, submit } from './helper.js';
import { openSse } from './sse-client.js';

const WORKER = 'test-worker:1';

async function listening(options: BuildOptions = {}) {
  const built = await build(options);
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = built.app.server.address() as AddressInfo;
  return { ...built, base: `http://127.0.0.1:${port}` };
}

/** A run that a (pretend) worker has claimed, so events can be appended to it. */
async function runningRun(app: FastifyInstance, headers: Record<string, string> = ACME): Promise<string> {
  const id = await submit(app, headers);
  expect((await app.store.claim(id, WORKER, 1, 'test-worker')).status).toBe('ok');
  return id;
}

function delta(text: string) {
  return { type: 'message.delta' as const, data: { text } };
}

async function fullLog(app: FastifyInstance, runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for (let after = '0'; ; ) {
    const page = await app.store.readEvents(runId, after, 1_000);
    events.push(...page);
    if (page.length < 1_000) return events;
    after = page.at(-1)?.id ?? after;
  }
}

describe('GET /v1/runs/:id/events (SSE)', () => {
  it('answers with SSE headers and frames of id, event and the whole event as data', async () => {
    const { app, base } = await listening();
    const id = await runningRun(app);
    const stream = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-cache');
    expect(stream.headers['x-accel-buffering']).toBe('no');
    await stream.waitFor((event) => event.type === 'run.started');
    const [queued] = stream.frames;
    const stored = (await app.store.readEvents(id))[0] as RunEvent;
    expect(queued).toEqual({ id: stored.id, event: 'run.queued', data: JSON.stringify(stored) });
    stream.close();
  });

  it('replays the backlog, then goes live: every event once, in order, while events keep coming', async () => {
    const { app, base } = await listening();
    const id = await runningRun(app);
    for (let i = 0; i < 120; i++) await app.store.append(id, delta(`before ${i}`), WORKER);

    // Clients connect while a writer appends: each sees the log exactly, whatever the interleaving.
    let appended = 0;
    const writer = (async () => {
      for (; appended < 400; appended++) await app.store.append(id, delta(`during ${appended}`), WORKER);
      await endRun(app, id, { status: 'completed', output: 'done' }, WORKER);
    })();
    const clients = [];
    for (let i = 0; i < 8; i++) {
      clients.push(await openSse(`${base}/v1/runs/${id}/events`, ACME));
      const target = (i + 1) * 40;
      await vi.waitFor(() => expect(appended).toBeGreaterThanOrEqual(target), {
        timeout: 10_000,
        interval: 1,
      });
    }
    await writer;
    const log = await fullLog(app, id);
    expect(log.at(-1)?.type).toBe('run.completed');
    for (const client of clients) {
      expect(await client.ended).toBe('end');
      expect(client.events.map((event) => event.id)).toEqual(log.map((event) => event.id));
      expect(client.events).toEqual(log);
    }
    await vi.waitFor(() => expect(app.streams.size).toBe(0));
  });

  it('delivers the events published while the backlog was being read (from the live buffer)', async () => {
    const { app, base } = await listening();
    const id = await runningRun(app);
    const readEvents = app.store.readEvents.bind(app.store);
    let raced = 0;
    // The first backlog reads are overtaken by a new event: appended after the read, and heard
    // (by every listener of the run, the stream first) before the read's answer is seen.
    app.store.readEvents = async (runId, afterId, count) => {
      const page = await readEvents(runId, afterId, count);
      if (raced < 3) {
        const text = `raced ${raced++}`;
        let heard: () => void = () => {};
        const published = new Promise<void>((resolve) => {
          heard = resolve;
        });
        const unsubscribe = await app.hub.subscribe(runId, (event) => {
          if ((event.data as { text?: string }).text === text) heard();
        });
        await app.store.append(runId, delta(text), WORKER);
        await published;
        await unsubscribe();
      }
      return page;
    };
    const stream = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    await stream.waitFor((event) => (event.data as { text?: string }).text === 'raced 0');
    app.store.readEvents = readEvents;
    await endRun(app, id, { status: 'completed', output: 'done' }, WORKER);
    expect(await stream.ended).toBe('end');
    expect(stream.events).toEqual(await fullLog(app, id));
    expect(raced).toBeGreaterThan(0);
  });

  it('resumes after Last-Event-ID (or ?after=), the header winning, and ends after the terminal event', async () => {
    const { app, base } = await listening();
    const id = await runningRun(app);
    for (let i = 0; i < 5; i++) await app.store.append(id, delta(`${i}`), WORKER);
    const log = await fullLog(app, id);
    const cut = log[3] as RunEvent;

    const byHeader = await openSse(`${base}/v1/runs/${id}/events?after=${log[1]?.id}`, {
      ...ACME,
      'last-event-id': cut.id,
    });
    const byQuery = await openSse(`${base}/v1/runs/${id}/events?after=${cut.id}`, ACME);
    const last = log.at(-1) as RunEvent;
    await byHeader.waitFor((event) => event.id === last.id);
    await byQuery.waitFor((event) => event.id === last.id);
    await endRun(app, id, { status: 'failed', error: { code: 'ERR_X', message: 'x' } }, WORKER);
    for (const client of [byHeader, byQuery]) {
      expect(await client.ended).toBe('end');
      expect(client.events.map((event) => event.type)).toEqual([
        ...log.slice(4).map((event) => event.type),
        'run.failed',
      ]);
    }
  });

  it('replays an ended run and ends at once; a client past the end gets an empty, ended stream', async () => {
    const { app, base } = await listening();
    const id = await submit(app);
    await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    const whole = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    expect(await whole.ended).toBe('end');
    expect(whole.events.map((event) => event.type)).toEqual(['run.queued', 'run.cancelled']);
    const past = await openSse(`${base}/v1/runs/${id}/events`, {
      ...ACME,
      'last-event-id': whole.frames[1]?.id ?? '',
    });
    expect(await past.ended).toBe('end');
    expect(past.events).toEqual([]);
  });

  it('sends a heartbeat comment', async () => {
    const { app, base } = await listening({ env: { TETHER_SSE_HEARTBEAT_MS: '50' } });
    const id = await runningRun(app);
    const stream = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    expect(await stream.waitForComment()).toBe('ping');
    stream.close();
  });

  it('takes the read token instead of a key (EventSource), and refuses a wrong one', async () => {
    const { app, base } = await listening();
    const response = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: { input: 'x', model: { provider: 'replay', script: [{ content: 'ok' }] } },
    });
    const { id, token } = response.json<{ id: string; token: string }>();
    const stream = await openSse(`${base}/v1/runs/${id}/events?token=${encodeURIComponent(token)}`);
    await stream.waitFor((event) => event.type === 'run.queued');
    stream.close();
    const refused = await openSse(`${base}/v1/runs/${id}/events?token=acme.1.${'A'.repeat(43)}`);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'ERR_UNAUTHORIZED' } });
  });

  it('caps concurrent streams per tenant (429), and frees the slot when a client leaves', async () => {
    const { app, base } = await listening({ env: { TETHER_SSE_MAX_PER_TENANT: '2' } });
    const id = await runningRun(app);
    const url = `${base}/v1/runs/${id}/events`;
    const first = await openSse(url, ACME);
    const second = await openSse(url, ACME);
    const third = await openSse(url, ACME);
    expect(third.status).toBe(429);
    expect(JSON.parse(third.body)).toMatchObject({ error: { code: 'ERR_TOO_MANY_STREAMS' } });
    const betaRun = await runningRun(app, BETA);
    const other = await openSse(`${base}/v1/runs/${betaRun}/events`, BETA);
    expect(other.status).toBe(200);
    first.close();
    await vi.waitFor(() => expect(app.streams.size).toBe(2));
    const again = await openSse(url, ACME);
    expect(again.status).toBe(200);
    for (const client of [second, other, again]) client.close();
  });

  it('drops a client that does not read, instead of buffering without bound', async () => {
    const { app, base } = await listening({ env: { TETHER_SSE_MAX_BUFFER_BYTES: '262144' } });
    const id = await runningRun(app);
    const slow = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    await slow.waitFor((event) => event.type === 'run.started');
    slow.pause();
    const fast = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    const chunk = 'x'.repeat(16 * 1024);
    // Until the slow client is dropped: it takes more than the socket buffers of both ends hold.
    let appended = 0;
    for (; appended < 4_000 && app.streams.size === 2; appended++) {
      await app.store.append(id, delta(chunk), WORKER);
    }
    await vi.waitFor(() => expect(app.streams.size).toBe(1));
    expect(slow.events.length).toBeLessThan(appended);
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain('tether_sse_streams_ended_total{reason="slow"} 1');
    // The reader that keeps up is unaffected, and a dropped client resumes from where it was.
    await endRun(app, id, { status: 'completed', output: 'done' }, WORKER);
    expect(await fast.ended).toBe('end');
    const log = await fullLog(app, id);
    expect(fast.events.map((event) => event.id)).toEqual(log.map((event) => event.id));
    const lastSeen = slow.frames.at(-1)?.id ?? '0';
    const resumed = await openSse(`${base}/v1/runs/${id}/events`, { ...ACME, 'last-event-id': lastSeen });
    expect(await resumed.ended).toBe('end');
    expect([...slow.events, ...resumed.events].map((event) => event.id)).toEqual(
      log.map((event) => event.id),
    );
  });

  it('ends streams cleanly when the server closes, and refuses new requests', async () => {
    const { app, base } = await listening({ keepOpen: true });
    const id = await runningRun(app);
    const stream = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    await stream.waitFor((event) => event.type === 'run.started');
    const closing = app.close();
    expect(await stream.ended).toBe('end');
    await closing;
    await expect(openSse(`${base}/v1/runs/${id}/events`, ACME)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('ends streams when the subscriber reconnects, so clients resume from the log', async () => {
    const { app, base } = await listening();
    const id = await runningRun(app);
    const stream = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    await stream.waitFor((event) => event.type === 'run.started');
    app.subscriber.disconnect(true);
    expect(await stream.ended).toBe('end');
    // The API serves again once its breaker has seen Redis answer (a PING after the subscriber's
    // ready): until then a client gets 503 with Retry-After, as during any outage.
    await vi.waitFor(() => expect(app.breaker.available).toBe(true));
    await app.store.append(id, delta('after the reconnect'), WORKER);
    // A client resumes from its last id for as long as streams end; under a loaded CI machine a resumed
    // stream was once ended by a second resync before its replay, so the client resumes again, as the SDK does.
    let last = stream.frames.at(-1)?.id ?? '0';
    let resumedDelta: { data: unknown } | undefined;
    for (let attempt = 0; attempt < 3 && resumedDelta === undefined; attempt++) {
      const resumed = await openSse(`${base}/v1/runs/${id}/events`, { ...ACME, 'last-event-id': last });
      expect(resumed.status).toBe(200);
      resumedDelta = await resumed.waitFor((e) => e.type === 'message.delta').catch(() => undefined);
      last = resumed.frames.at(-1)?.id ?? last;
      resumed.close();
    }
    expect(resumedDelta?.data).toEqual({ text: 'after the reconnect' });
  });

  it('keeps streams open on a subscriber ready that follows no lost connection', async () => {
    const { app, base } = await listening();
    const id = await runningRun(app);
    const stream = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    await stream.waitFor((event) => event.type === 'run.started');
    // A repeated ready (no close before it) has missed nothing: the stream goes on live.
    app.subscriber.emit('ready');
    await app.store.append(id, delta('still live'), WORKER);
    const event = await stream.waitFor((e) => e.type === 'message.delta');
    expect(event.data).toEqual({ text: 'still live' });
    stream.close();
  });

  it('answers 400 before streaming for an event id beyond the stream id range, and serves after the largest one', async () => {
    const { app, base } = await listening();
    const id = await submit(app);
    await app.inject({ method: 'POST', url: `/v1/runs/${id}/cancel`, headers: ACME });
    for (const [cursor, header] of [
      ['18446744073709551616-0', true],
      ['0-18446744073709551616', true],
      ['99999999999999999999-0', false],
    ] as const) {
      const stream = header
        ? await openSse(`${base}/v1/runs/${id}/events`, { ...ACME, 'last-event-id': cursor })
        : await openSse(`${base}/v1/runs/${id}/events?after=${cursor}`, ACME);
      expect(stream.status, cursor).toBe(400);
      const { error } = JSON.parse(stream.body) as { error: { code: string; message: string } };
      expect(error.code).toBe('ERR_VALIDATION');
      expect(error.message).toContain(header ? 'headers.last-event-id' : 'querystring.after');
      expect(error.message).toContain('18446744073709551615');
    }
    const last = await openSse(`${base}/v1/runs/${id}/events`, {
      ...ACME,
      'last-event-id': '18446744073709551615-18446744073709551615',
    });
    expect(await last.ended).toBe('end');
    expect(last.events).toEqual([]);
    const whole = await openSse(`${base}/v1/runs/${id}/events`, ACME);
    expect(await whole.ended).toBe('end');
    expect(whole.events.map((event) => event.type)).toEqual(['run.queued', 'run.cancelled']);
  });

  it('answers 404 before streaming for an unknown run', async () => {
    const { base } = await listening();
    const stream = await openSse(`${base}/v1/runs/run_0000000000000000000000000a/events`, ACME);
    expect(stream.status).toBe(404);
    expect(JSON.parse(stream.body)).toMatchObject({ error: { code: 'ERR_RUN_NOT_FOUND' } });
  });
});
