/**
 * The webhook pump in process, on the real Redis and the real webhooks queue,
 * against a receiving server of the test's: retries after the backoff (its base
 * made short), giving up past the delivery's age, disabling an endpoint that
 * keeps failing, and the outbound rules at each attempt: an address refused
 * when the name is resolved (DNS rebinding), a metadata address even when
 * private ones are allowed, no redirect followed, the timeout, a large body
 * ignored.
 */
import type { LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOutboundRequest } from '@tether/outbound';
import { newId, type WebhookSettings } from '@tether/protocol';
import { createKeys, createRedisConnection, WEBHOOK_QUEUE_NAME } from '@tether/store/redis';
import { RunService, RunStore } from '@tether/store/runs';
import { type PumpJobData, WebhookDispatcher, WebhookStore } from '@tether/store/webhooks';
import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { Worker } from 'bullmq';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createPump } from '../src/webhooks/pump.js';

const redis = createRedisConnection({
  ...testRedisTarget(),
  name: 'webhook-pump',
  mode: 'wait',
  onError: () => {},
});
const bullmq = createRedisConnection({
  ...testRedisTarget(),
  name: 'webhook-pump:bullmq',
  mode: 'wait',
  onError: () => {},
});
afterAll(async () => {
  await redis.quit();
  await bullmq.quit();
});
const secrets = { seal: (text: string) => `sealed:${text}`, open: (text: string) => text.slice(7) };
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A receiver answering each request with `answer(n)` (n from 1): a status, or 'hang'. */
async function receiver(answer: (n: number, response: ServerResponse) => number | 'hang' | 'done') {
  const times: number[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    request.on('end', () => {
      times.push(Date.now());
      const fate = answer(times.length, response);
      if (typeof fate === 'number') response.writeHead(fate).end('nope');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as AddressInfo).port, times };
}

/** A name resolver that answers `address` for every name (what a rebinding DNS would do). */
function resolvesTo(address: string) {
  return ((_name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const entry: LookupAddress = { address, family: address.includes(':') ? 6 : 4 };
    if (options.all) callback(null, [entry]);
    else callback(null, entry.address, entry.family);
  }) as never;
}

/** A deployment of the webhooks alone: the store, a dispatcher and a pump worker with these settings. */
async function pumping(
  settings: Partial<WebhookSettings>,
  requestOptions: Parameters<typeof createOutboundRequest>[1] = {},
  policy = { allowHttp: true, allowPrivate: true },
) {
  const keys = createKeys(uniquePrefix('pump'));
  const store = new RunStore({ redis, keys });
  const webhooks = new WebhookStore({ redis, queueConnection: bullmq, keys, settings });
  const dispatcher = new WebhookDispatcher({ store, webhooks, secrets, publicUrl: 'http://api.test' });
  const runs = new RunService({ redis, queueConnection: bullmq, keys, store, webhooks: dispatcher });
  const pump = createPump({
    store: webhooks,
    secrets,
    send: createOutboundRequest(policy, { timeoutMs: 2_000, ...requestOptions }),
    perEndpoint: 4,
    decisions: runs,
    log: pino({ level: 'silent' }),
  });
  const worker = new Worker<PumpJobData>(WEBHOOK_QUEUE_NAME, pump.process, {
    connection: bullmq,
    prefix: keys.webhookQueuePrefix,
    concurrency: 2,
  });
  cleanups.push(
    () => webhooks.close(),
    () => runs.close(),
    () => worker.close(),
  );
  const tenant = `t-${newId('run').slice(-8)}`;
  /** An endpoint to `url` for every event. */
  const endpoint = async (url: string) => {
    const created = await webhooks.create(tenant, { url, events: ['*'], secret: secrets.seal(SECRET) });
    if (created === 'limit') throw new Error('limit');
    return created.id;
  };
  /** A run of the tenant that has completed, dispatched. */
  const completed = async () => {
    const runId = newId('run');
    const spec = { input: 'x', model: { provider: 'replay' as const, script: [] } };
    await store.create({ id: runId, tenant, spec, createdAtMs: Date.now(), queue: keys.queuePrefix });
    await store.finalize(runId, { status: 'completed', output: 'ok' });
    await dispatcher.dispatch(runId, tenant);
    return runId;
  };
  const deliveries = async (endpointId: string) =>
    (await webhooks.deliveries(tenant, endpointId, { limit: 10 })).deliveries;
  return { webhooks, tenant, endpoint, completed, deliveries };
}

describe('the webhook pump', () => {
  it('retries a failed attempt after the backoff, doubled each time, and delivers', async () => {
    const hook = await receiver((n) => (n <= 3 ? 500 : 204));
    const { endpoint, completed, deliveries, webhooks, tenant } = await pumping({ backoffMs: 100 });
    const id = await endpoint(`http://127.0.0.1:${hook.port}/in`);
    await completed();
    await expect.poll(async () => (await deliveries(id))[0]?.status, { timeout: 10_000 }).toBe('delivered');
    const [gap1, gap2, gap3] = hook.times.slice(1).map((time, i) => time - (hook.times[i] ?? 0));
    expect(gap1).toBeGreaterThanOrEqual(90);
    expect(gap2).toBeGreaterThanOrEqual(190);
    expect(gap3).toBeGreaterThanOrEqual(390);
    expect((await deliveries(id))[0]).toMatchObject({ attempts: 4, lastStatus: 204 });
    expect((await webhooks.get(tenant, id))?.failingSince).toBeUndefined();
  });

  it('gives a delivery up once a retry would pass its age, and disables an endpoint that failed for too long', async () => {
    const hook = await receiver(() => 503);
    const { endpoint, completed, deliveries, webhooks, tenant } = await pumping({
      backoffMs: 100,
      maxAgeMs: 250,
      disableAfterMs: 1_000,
    });
    const id = await endpoint(`http://127.0.0.1:${hook.port}/in`);
    await completed();
    await expect.poll(async () => (await deliveries(id))[0]?.status, { timeout: 10_000 }).toBe('failed');
    expect((await deliveries(id))[0]).toMatchObject({ lastStatus: 503, lastError: 'HTTP 503: nope' });
    // More failures, until the endpoint has failed without a success for disableAfterMs.
    await expect
      .poll(
        async () => {
          if ((await webhooks.get(tenant, id))?.enabled) await completed();
          return (await webhooks.get(tenant, id))?.enabled;
        },
        { timeout: 10_000, interval: 300 },
      )
      .toBe(false);
    await expect
      .poll(async () => (await deliveries(id)).filter((d) => d.status === 'pending').length, {
        timeout: 5_000,
      })
      .toBe(0);
    const sent = hook.times.length;
    // Disabled: nothing more is dispatched or sent.
    await completed();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hook.times.length).toBe(sent);
  });

  it('refuses, at each attempt, an address the resolved name points to, and a metadata address even when private ones are allowed', async () => {
    const hook = await receiver(() => 204);
    const rebinding = await pumping(
      { backoffMs: 60_000 },
      { lookup: resolvesTo('127.0.0.1') },
      { allowHttp: true, allowPrivate: false },
    );
    const local = await rebinding.endpoint(`http://hooks.example.com:${hook.port}/in`);
    await rebinding.completed();
    const metadata = await pumping({ backoffMs: 60_000 }, { lookup: resolvesTo('169.254.169.254') });
    const cloud = await metadata.endpoint('http://metadata.example.com/in');
    await metadata.completed();
    for (const [deployment, id] of [
      [rebinding, local],
      [metadata, cloud],
    ] as const) {
      await expect
        .poll(async () => (await deployment.deliveries(id))[0]?.attempts, { timeout: 10_000 })
        .toBe(1);
      const [delivery] = await deployment.deliveries(id);
      expect(delivery).toMatchObject({ status: 'pending', nextAttemptAt: expect.any(Number) });
      expect(delivery?.lastError).toMatch(/refused/);
      expect(delivery?.lastStatus).toBeUndefined();
    }
    expect(hook.times).toEqual([]);
  });

  it('follows no redirect, stops at the timeout, and ignores a body past 64 KB', async () => {
    const redirecting = await receiver((_, response) => {
      response.writeHead(307, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      return 'done';
    });
    const hanging = await receiver(() => 'hang');
    const large = await receiver((_, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1_000_000));
      return 'done';
    });
    const { endpoint, completed, deliveries } = await pumping({ backoffMs: 60_000 }, { timeoutMs: 500 });
    const [redirect, slow, big] = [
      await endpoint(`http://127.0.0.1:${redirecting.port}/in`),
      await endpoint(`http://127.0.0.1:${hanging.port}/in`),
      await endpoint(`http://127.0.0.1:${large.port}/in`),
    ];
    await completed();
    await expect.poll(async () => (await deliveries(big))[0]?.status, { timeout: 10_000 }).toBe('delivered');
    await expect.poll(async () => (await deliveries(redirect))[0]?.attempts, { timeout: 10_000 }).toBe(1);
    expect((await deliveries(redirect))[0]).toMatchObject({ status: 'pending', lastStatus: 307 });
    await expect.poll(async () => (await deliveries(slow))[0]?.attempts, { timeout: 10_000 }).toBe(1);
    expect((await deliveries(slow))[0]?.lastError).toMatch(/did not answer within 500 ms/);
    expect(redirecting.times).toHaveLength(1);
  });
});
