/**
 * `/v1/approval-policy`: a tenant's default approval policy, set, read and removed; the runs that
 * take it at submit (a run's own policy, or its session's defaults', replaces it); what another
 * API process sees after a change; tenancy, bad input and the server's health after it.
 */

import { randomBytes } from 'node:crypto';
import type { ApprovalPolicy, TenantApprovalPolicy } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, expectServing, replayRun, submit } from './helper.js';

const policy: ApprovalPolicy = {
  tools: ['write_file', 'github__*'],
  bash: { allow: ['^git (status|diff)\\b'], ask: ['.*'] },
  timeoutMs: 120_000,
  onTimeout: 'reject',
};

const call = (
  app: FastifyInstance,
  method: 'GET' | 'PUT' | 'DELETE',
  headers: Record<string, string> = ACME,
  payload?: unknown,
) =>
  app.inject({
    method,
    url: '/v1/approval-policy',
    headers,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

/** The approval policy a run keeps in its stored spec. */
async function approvalOf(app: FastifyInstance, runId: string): Promise<ApprovalPolicy | undefined> {
  const spec = JSON.parse((await app.redis.get(app.keys.run(runId).spec)) ?? '{}');
  return spec.approval;
}

describe('/v1/approval-policy', () => {
  it('is set, read and removed per tenant; runs with no policy of their own take it at submit', async () => {
    const { app } = await build();
    expect((await call(app, 'GET')).json()).toEqual({ policy: null, updatedAt: null });

    const set = await call(app, 'PUT', ACME, policy);
    expect(set.statusCode, set.body).toBe(200);
    const stored = set.json<TenantApprovalPolicy>();
    expect(stored.policy).toEqual(policy);
    expect(Date.parse(stored.updatedAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect((await call(app, 'GET')).json()).toEqual(stored);
    // Another tenant has its own, none here.
    expect((await call(app, 'GET', BETA)).json()).toEqual({ policy: null, updatedAt: null });

    const plain = await submit(app, ACME, replayRun());
    expect(await approvalOf(app, plain)).toEqual(policy);
    // A run's own policy replaces it as a whole; `{}` holds nothing.
    const own = await submit(app, ACME, replayRun(undefined, { approval: { tools: ['patch'] } }));
    expect(await approvalOf(app, own)).toEqual({ tools: ['patch'] });
    const none = await submit(app, ACME, replayRun(undefined, { approval: {} }));
    expect(await approvalOf(app, none)).toEqual({});
    // Another tenant's runs take nothing of it.
    expect(await approvalOf(app, await submit(app, BETA, replayRun()))).toBeUndefined();

    // A session's defaults replace it too; a session without one takes the tenant's.
    const session = async (body: object) =>
      (await app.inject({ method: 'POST', url: '/v1/sessions', headers: ACME, payload: body })).json<{
        id: string;
      }>().id;
    const message = async (sessionId: string) => {
      const response = await app.inject({
        method: 'POST',
        url: `/v1/sessions/${sessionId}/runs`,
        headers: ACME,
        payload: replayRun(),
      });
      expect(response.statusCode, response.body).toBe(202);
      return response.json<{ id: string }>().id;
    };
    const withDefaults = await session({ defaults: { approval: { tools: ['bash'] } } });
    expect(await approvalOf(app, await message(withDefaults))).toEqual({ tools: ['bash'] });
    expect(await approvalOf(app, await message(await session({})))).toEqual(policy);

    // A run submitted before a change keeps what it took.
    const replaced = await call(app, 'PUT', ACME, { tools: ['*'] });
    expect(replaced.json<TenantApprovalPolicy>().policy).toEqual({ tools: ['*'] });
    expect(await approvalOf(app, plain)).toEqual(policy);
    expect(await approvalOf(app, await submit(app, ACME, replayRun()))).toEqual({ tools: ['*'] });

    const removed = await call(app, 'DELETE');
    expect(removed.statusCode).toBe(204);
    expect((await call(app, 'DELETE')).statusCode).toBe(204);
    expect((await call(app, 'GET')).json()).toEqual({ policy: null, updatedAt: null });
    expect(await approvalOf(app, await submit(app, ACME, replayRun()))).toBeUndefined();
  });

  it("is used at once by another API process's submits after a change", async () => {
    const { app, config } = await build();
    const { app: other } = await build({ env: { TETHER_QUEUE_PREFIX: config.queuePrefix } });
    // The other process reads (and keeps a copy of) the tenant's having none.
    expect(await approvalOf(other, await submit(other, ACME, replayRun()))).toBeUndefined();
    await call(app, 'PUT', ACME, policy);
    // The change is published: the other process's copy is dropped, not kept for its ten seconds.
    await expect.poll(async () => approvalOf(other, await submit(other, ACME, replayRun()))).toEqual(policy);
    await call(app, 'DELETE');
    await expect.poll(async () => approvalOf(other, await submit(other, ACME, replayRun()))).toBeUndefined();
  });

  it('refuses a policy it could not apply, naming the field, and keeps the one before', async () => {
    const { app } = await build();
    await call(app, 'PUT', ACME, policy);
    const refusals: [unknown, string, string][] = [
      [{ bash: { ask: ['^git(?= push)'] } }, 'ERR_APPROVAL_POLICY_INVALID', 'approval.bash.ask[0]'],
      [{ approver: 'whk_0000000000000000000000000a' }, 'ERR_APPROVAL_POLICY_INVALID', 'approval.approver'],
      [{ tools: 'write_file' }, 'ERR_VALIDATION', 'body.tools'],
      [{ tools: ['write file'] }, 'ERR_VALIDATION', 'body.tools.0'],
      [{ onTimeout: 'maybe' }, 'ERR_VALIDATION', 'body.onTimeout'],
      [{ timeoutMs: 5 }, 'ERR_VALIDATION', 'body.timeoutMs'],
      [{ ask: ['.*'] }, 'ERR_VALIDATION', 'ask'],
    ];
    for (const [body, code, field] of refusals) {
      const response = await call(app, 'PUT', ACME, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      const { error } = response.json<{ error: { code: string; message: string } }>();
      expect(error.code, JSON.stringify(body)).toBe(code);
      expect(error.message, JSON.stringify(body)).toContain(field);
    }
    const notJson = await app.inject({
      method: 'PUT',
      url: '/v1/approval-policy',
      headers: { ...ACME, 'content-type': 'application/json' },
      payload: '{"tools": [',
    });
    expect(notJson.statusCode).toBe(400);
    // Nothing was lost, and the server is fine afterwards.
    expect((await call(app, 'GET')).json<TenantApprovalPolicy>().policy).toEqual(policy);
    await expectServing(app);
    // Without a key: 401, and nothing is shown.
    const anonymous = await app.inject({ method: 'GET', url: '/v1/approval-policy' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.body).not.toContain('write_file');
  });

  it("takes an approver that is one of the tenant's webhook endpoints, not another tenant's", async () => {
    const { app } = await build({ env: { TETHER_SECRETS_KEY: randomBytes(32).toString('base64') } });
    const created = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: BETA,
      payload: { url: 'https://hooks.example.com/approve', events: ['run.completed'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const betaEndpoint = created.json<{ id: string }>().id;
    const theirs = await call(app, 'PUT', ACME, { tools: ['*'], approver: betaEndpoint });
    expect(theirs.statusCode).toBe(400);
    expect(theirs.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_POLICY_INVALID' } });
    const mine = await call(app, 'PUT', BETA, { tools: ['*'], approver: betaEndpoint });
    expect(mine.statusCode, mine.body).toBe(200);
    // A run's own approver, and a session's default one, are checked the same way.
    const run = await app.inject({
      method: 'POST',
      url: '/v1/runs',
      headers: ACME,
      payload: replayRun(undefined, { approval: { tools: ['*'], approver: betaEndpoint } }),
    });
    expect(run.statusCode).toBe(400);
    expect(run.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_POLICY_INVALID' } });
    const session = await app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: ACME,
      payload: { defaults: { approval: { approver: betaEndpoint } } },
    });
    expect(session.statusCode).toBe(400);
    expect(session.json<{ error: { message: string } }>().error.message).toContain(
      'defaults.approval.approver',
    );
  });
});
