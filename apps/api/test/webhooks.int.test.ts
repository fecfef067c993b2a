import { randomBytes } from 'node:crypto';
import type { Webhook, WebhookWithSecret } from '@tether/protocol';
import { WebhookDispatcher } from '@tether/store/webhooks';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, submit, suspend } from './helper.js';

/**
 * `/v1/webhooks` in process: the routes, their refusals and limits, tenancy
 * on every route, the secret shown only at creation and rotation, the log and
 * redelivery, the answer token on the clarify route, and the OpenAPI document.
 * (Deliveries themselves, over real ports: webhooks-e2e.int.test.ts.)
 */
const SECRETS_KEY = randomBytes(32).toString('base64');
const HOOK = 'https://hooks.example.com/tether';

async function app(env: Record<string, string> = {}) {
  const built = await build({
    env: { TETHER_SECRETS_KEY: SECRETS_KEY, TETHER_WEBHOOK_MAX_ENDPOINTS: '2', ...env },
  });
  const inject = async <T>(
    method: string,
    url: string,
    headers: Record<string, string> = ACME,
    payload?: object,
  ) => {
    const response = await built.app.inject({ method: method as 'GET', url, headers, payload });
    return { status: response.statusCode, body: response.body ? (response.json() as T) : (undefined as T) };
  };
  return { ...built, inject };
}

type Failure = { error: { code: string; message: string } };

describe('/v1/webhooks', () => {
  it('adds an endpoint (201, its secret shown once), lists, reads, changes and deletes it', async () => {
    const { inject, app: fastify } = await app();
    const created = await inject<WebhookWithSecret>('POST', '/v1/webhooks', ACME, {
      url: HOOK,
      events: ['run.completed', 'clarify.requested'],
      description: 'ops',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^whk_/),
      url: HOOK,
      events: ['run.completed', 'clarify.requested'],
      description: 'ops',
      enabled: true,
      createdAt: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    const { id, secret } = created.body;
    // Sealed at rest: the secret is nowhere in Redis as it was given.
    const stored = await fastify.redis.hgetall(fastify.keys.webhooks('acme').endpoint(id));
    expect(JSON.stringify(stored)).not.toContain(secret.slice(6));
    const listed = await inject<{ data: Webhook[] }>('GET', '/v1/webhooks');
    expect(listed.body.data.map((w) => [w.id, 'secret' in w])).toEqual([[id, false]]);
    const read = await inject<Webhook>('GET', `/v1/webhooks/${id}`);
    expect(read.body).toEqual(listed.body.data[0]);
    const changed = await inject<Webhook>('PATCH', `/v1/webhooks/${id}`, ACME, {
      events: ['*'],
      description: '',
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ events: ['*'], enabled: true });
    expect(changed.body.description).toBeUndefined();
    const disabled = await inject<Webhook>('PATCH', `/v1/webhooks/${id}`, ACME, { enabled: false });
    expect(disabled.body).toMatchObject({ enabled: false, disabledReason: 'disabled by request' });
    const enabled = await inject<Webhook>('PATCH', `/v1/webhooks/${id}`, ACME, { enabled: true });
    expect(enabled.body.enabled).toBe(true);
    expect(enabled.body.disabledAt).toBeUndefined();
    const rotated = await inject<WebhookWithSecret>('POST', `/v1/webhooks/${id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(secret);
    expect((await inject('DELETE', `/v1/webhooks/${id}`)).status).toBe(204);
    expect((await inject<Failure>('GET', `/v1/webhooks/${id}`)).body.error.code).toBe(
      'ERR_WEBHOOK_NOT_FOUND',
    );
    expect((await inject('DELETE', `/v1/webhooks/${id}`)).status).toBe(404);
  });

  it("answers another tenant's endpoint 404 on every route, and lists only the caller's", async () => {
    const { inject } = await app();
    const { body } = await inject<WebhookWithSecret>('POST', '/v1/webhooks', ACME, {
      url: HOOK,
      events: ['*'],
    });
    const delivery = 'whd_0123456789abcdefghjkmnpqrs';
    const routes: [string, string, object?][] = [
      ['GET', `/v1/webhooks/${body.id}`],
      ['PATCH', `/v1/webhooks/${body.id}`, { enabled: false }],
      ['POST', `/v1/webhooks/${body.id}/rotate-secret`],
      ['GET', `/v1/webhooks/${body.id}/deliveries`],
      ['POST', `/v1/webhooks/${body.id}/deliveries/${delivery}/redeliver`],
      ['DELETE', `/v1/webhooks/${body.id}`],
    ];
    for (const [method, url, payload] of routes) {
      const answer = await inject<Failure>(method, url, BETA, payload);
      expect([url, answer.status, answer.body.error.code]).toEqual([url, 404, 'ERR_WEBHOOK_NOT_FOUND']);
    }
    expect((await inject<{ data: Webhook[] }>('GET', '/v1/webhooks', BETA)).body.data).toEqual([]);
    expect((await inject<Webhook>('GET', `/v1/webhooks/${body.id}`)).body.enabled).toBe(true);
    expect((await inject('GET', '/v1/webhooks', {})).status).toBe(401);
  });

  it('refuses bad input with 400, naming the field or the rule, and keeps the limit on endpoints', async () => {
    const { inject } = await app();
    const cases: [object, string, RegExp][] = [
      [{ url: HOOK, events: ['run.exploded'] }, 'ERR_VALIDATION', /events/],
      [{ url: HOOK, events: [] }, 'ERR_VALIDATION', /events/],
      [{ url: HOOK, events: ['*', '*'] }, 'ERR_VALIDATION', /events/],
      [{ url: HOOK, events: ['*'], secret: 'mine' }, 'ERR_VALIDATION', /secret/],
      [{ url: `${HOOK}/${'x'.repeat(2_100)}`, events: ['*'] }, 'ERR_VALIDATION', /url/],
      [{ url: 'http://hooks.example.com/', events: ['*'] }, 'ERR_URL_REFUSED', /https/],
      [{ url: 'https://user:pw@hooks.example.com/', events: ['*'] }, 'ERR_URL_REFUSED', /credentials/],
      [{ url: 'https://10.1.2.3/', events: ['*'] }, 'ERR_URL_REFUSED', /private/],
      [{ url: 'https://localhost:8443/', events: ['*'] }, 'ERR_URL_REFUSED', /loopback/],
      [{ url: 'https://169.254.169.254/latest', events: ['*'] }, 'ERR_URL_REFUSED', /metadata|link-local/],
    ];
    for (const [body, code, message] of cases) {
      const answer = await inject<Failure>('POST', '/v1/webhooks', ACME, body);
      expect([JSON.stringify(body).slice(0, 80), answer.status, answer.body.error.code]).toEqual([
        JSON.stringify(body).slice(0, 80),
        400,
        code,
      ]);
      expect(answer.body.error.message).toMatch(message);
    }
    for (let i = 0; i < 2; i++) {
      expect((await inject('POST', '/v1/webhooks', ACME, { url: HOOK, events: ['*'] })).status).toBe(201);
    }
    const over = await inject<Failure>('POST', '/v1/webhooks', ACME, { url: HOOK, events: ['*'] });
    expect([over.status, over.body.error.code]).toEqual([409, 'ERR_WEBHOOK_LIMIT']);
    expect((await inject('POST', '/v1/webhooks', BETA, { url: HOOK, events: ['*'] })).status).toBe(201);
    const [first] = (await inject<{ data: Webhook[] }>('GET', '/v1/webhooks')).body.data;
    const patch = await inject<Failure>('PATCH', `/v1/webhooks/${first?.id}`, ACME, {});
    expect(patch.status).toBe(400);
    const refused = await inject<Failure>('PATCH', `/v1/webhooks/${first?.id}`, ACME, {
      url: 'https://192.168.0.1/',
    });
    expect(refused.body.error.code).toBe('ERR_URL_REFUSED');
  });

  it('takes private and http URLs only as the operator allows, and metadata addresses never', async () => {
    const { inject } = await app({
      TETHER_WEBHOOK_ALLOW_HTTP: '1',
      TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
      TETHER_WEBHOOK_MAX_ENDPOINTS: '5',
    });
    for (const url of ['http://127.0.0.1:9/in', 'http://10.0.0.7/in', 'https://localhost/in']) {
      expect((await inject('POST', '/v1/webhooks', BETA, { url, events: ['*'] })).status).toBe(201);
    }
    for (const url of ['http://169.254.169.254/', 'http://[fd00:ec2::254]/']) {
      const answer = await inject<Failure>('POST', '/v1/webhooks', ACME, { url, events: ['*'] });
      expect([url, answer.body.error.code]).toEqual([url, 'ERR_URL_REFUSED']);
    }
  });

  it('answers 503 ERR_SECRETS_KEY_MISSING for what keeps a secret when TETHER_SECRETS_KEY is unset', async () => {
    const { inject } = await app({ TETHER_SECRETS_KEY: '' });
    const answer = await inject<Failure>('POST', '/v1/webhooks', ACME, { url: HOOK, events: ['*'] });
    expect([answer.status, answer.body.error.code]).toEqual([503, 'ERR_SECRETS_KEY_MISSING']);
    expect(answer.body.error.message).toContain('openssl rand -base64 32');
  });

  it('logs deliveries, pages them, and sends one again; unknown deliveries are 404', async () => {
    const { inject, app: fastify, config } = await app();
    const { body } = await inject<WebhookWithSecret>('POST', '/v1/webhooks', ACME, {
      url: HOOK,
      events: ['run.cancelled'],
    });
    const dispatcher = new WebhookDispatcher({
      store: fastify.store,
      webhooks: fastify.webhooks,
      publicUrl: config.publicUrl,
    });
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const runId = await submit(fastify);
      runs.push(runId);
      // The API's cancel records the delivery (the runs are queued: nothing else ends them).
      expect((await inject('POST', `/v1/runs/${runId}/cancel`)).status).toBe(202);
      expect(await dispatcher.dispatch(runId, 'acme')).toBe(0);
    }
    type Page = {
      data: { id: string; runId: string; status: string; attempts: number }[];
      nextCursor: string | null;
    };
    const first = await inject<Page>('GET', `/v1/webhooks/${body.id}/deliveries?limit=2`);
    expect(first.body.data).toHaveLength(2);
    const second = await inject<Page>(
      'GET',
      `/v1/webhooks/${body.id}/deliveries?limit=2&cursor=${first.body.nextCursor}`,
    );
    expect(second.body.nextCursor).toBeNull();
    const all = [...first.body.data, ...second.body.data];
    expect(all.map((d) => d.runId).sort()).toEqual([...runs].sort());
    expect(all.every((d) => d.status === 'pending' && d.attempts === 0)).toBe(true);
    const again = await inject<{ id: string; redeliveryOf: string }>(
      'POST',
      `/v1/webhooks/${body.id}/deliveries/${all[0]?.id}/redeliver`,
    );
    expect(again.status).toBe(202);
    expect(again.body.redeliveryOf).toBe(all[0]?.id);
    const missing = await inject<Failure>(
      'POST',
      `/v1/webhooks/${body.id}/deliveries/whd_0123456789abcdefghjkmnpqrs/redeliver`,
    );
    expect([missing.status, missing.body.error.code]).toEqual([404, 'ERR_WEBHOOK_DELIVERY_NOT_FOUND']);
    const badCursor = await inject<Failure>('GET', `/v1/webhooks/${body.id}/deliveries?cursor=nope`);
    expect(badCursor.status).toBe(400);
  });

  it('answers a question with its answer token instead of a key: once, and only that question', async () => {
    const { inject, app: fastify, config } = await app();
    await inject('POST', '/v1/webhooks', ACME, { url: HOOK, events: ['clarify.requested'] });
    const dispatcher = new WebhookDispatcher({
      store: fastify.store,
      webhooks: fastify.webhooks,
      secrets: config.secrets,
      publicUrl: config.publicUrl,
    });
    const tokenOf = async (runId: string) => {
      await dispatcher.dispatch(runId, 'acme');
      const [endpoint] = await fastify.webhooks.list('acme');
      const taken = await fastify.webhooks.take('acme', endpoint?.id ?? '', 10, 60_000, false);
      const delivery = taken?.deliveries.find((d) => d.runId === runId);
      const payload = JSON.parse(delivery?.payload ?? '{}') as { answer: { url: string } };
      return { token: config.secrets?.open(delivery?.token ?? '') ?? '', url: payload.answer.url };
    };
    const [one, two] = [await submit(fastify), await submit(fastify)];
    const [q1, q2] = [await suspend(fastify, one), await suspend(fastify, two)];
    const { token, url } = await tokenOf(one);
    const { token: other } = await tokenOf(two);
    expect(url).toBe(`${config.publicUrl}/v1/runs/${one}/clarify/${q1}`);
    const path = new URL(url).pathname;
    const bearer = (value: string) => ({ authorization: `Bearer ${value}` });
    // Another question's token, or a made-up one, answers nothing.
    const wrong = await inject<Failure>('POST', path, bearer(other), { answer: 'a' });
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'ERR_ANSWER_TOKEN_INVALID']);
    const madeUp = await inject<Failure>('POST', path, bearer(`wat_${'A'.repeat(43)}`), { answer: 'a' });
    expect(madeUp.status).toBe(401);
    const ok = await inject<{ ok: true }>('POST', path, bearer(token), { answer: 'b' });
    expect([ok.status, ok.body]).toEqual([200, { ok: true }]);
    const used = await inject<Failure>('POST', path, bearer(token), { answer: 'a' });
    expect([used.status, used.body.error.code]).toEqual([409, 'ERR_ANSWER_TOKEN_USED']);
    // The other run's question, with its own token in the query.
    const viaQuery = await inject(
      'POST',
      `/v1/runs/${two}/clarify/${q2}?token=${other}`,
      {},
      { answer: 'a' },
    );
    expect(viaQuery.status).toBe(200);
    expect((await fastify.store.get(one))?.status).toBe('queued');
  });

  it('documents every route in /openapi.json', async () => {
    const { inject } = await app();
    const { body } = await inject<{ paths: Record<string, Record<string, unknown>> }>('GET', '/openapi.json');
    const methods = (path: string) => Object.keys(body.paths[path] ?? {}).sort();
    expect(methods('/v1/webhooks')).toEqual(['get', 'post']);
    expect(methods('/v1/webhooks/{id}')).toEqual(['delete', 'get', 'patch']);
    expect(methods('/v1/webhooks/{id}/rotate-secret')).toEqual(['post']);
    expect(methods('/v1/webhooks/{id}/deliveries')).toEqual(['get']);
    expect(methods('/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver')).toEqual(['post']);
  });
});
