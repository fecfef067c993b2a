/**
 * `POST /v1/runs/:id/approvals/:requestId` in process: a run made to wait on decisions in the
 * store (as a worker's attempt does), then the route's decisions, refusals, tenancy and limits.
 * The worker's side (the calls run, edited or refused, in order) is apps/worker/test/approvals.int.test.ts.
 */

import { randomBytes } from 'node:crypto';
import { newId, type PendingApproval, type Run, type WebhookPayload } from '@tether/protocol';
import { WebhookDispatcher } from '@tether/store/webhooks';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ACME, BETA, build, expectServing, replayRun, runEvents, submit } from './helper.js';

/** Makes run `runId` wait for decisions on a write_file call and a client tool call, as a worker would. */
async function waitOnApprovals(app: FastifyInstance, runId: string, expiresInMs = 60_000) {
  const token = 'test-worker:1';
  const claimed = await app.store.claim(runId, token, 1, 'test-worker');
  if (claimed.status !== 'ok') throw new Error(`claim answered ${claimed.status}`);
  const expiresAt = new Date(Date.now() + expiresInMs).toISOString();
  const approval = (callId: string, tool: string, args: Record<string, unknown>): PendingApproval => ({
    requestId: newId('apr'),
    callId,
    tool,
    arguments: args,
    reason: `tools: ${tool}`,
    expiresAt,
    onTimeout: 'reject',
  });
  const approvals = [
    approval('call_0', 'write_file', { path: 'a.txt', content: 'hi' }),
    approval('call_1', 'get_weather', { city: 'Oslo' }),
  ];
  await app.store.requestApprovals(runId, token, approvals);
  return approvals as [PendingApproval, PendingApproval];
}

const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

const decide = (
  app: FastifyInstance,
  runId: string,
  requestId: string,
  payload: unknown,
  headers: Record<string, string> = ACME,
) =>
  app.inject({
    method: 'POST',
    url: `/v1/runs/${runId}/approvals/${requestId}`,
    headers,
    payload: payload as object,
  });

describe('POST /v1/runs/:id/approvals/:requestId', () => {
  it('shows the held calls on the run, takes the first decision of each, and resumes the run after the last', async () => {
    const { app } = await build();
    const id = await submit(
      app,
      ACME,
      replayRun(undefined, { tools: [weather], approval: { tools: ['*'] } }),
    );
    const [write, client] = await waitOnApprovals(app, id);
    const waiting = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(waiting.status).toBe('waiting_for_input');
    expect(waiting.pendingApprovals).toEqual([write, client]);

    const approved = await decide(app, id, write.requestId, { decision: 'approve' });
    expect(approved.statusCode, approved.body).toBe(200);
    expect(approved.json()).toEqual({ ok: true });
    const again = await decide(app, id, write.requestId, { decision: 'reject' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_ALREADY_DECIDED' } });
    const after = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(after.pendingApprovals).toEqual([client]);
    expect(after.status).toBe('waiting_for_input');

    const edited = await decide(app, id, client.requestId, {
      decision: 'edit',
      arguments: { city: 'Bergen' },
    });
    expect(edited.statusCode, edited.body).toBe(200);
    const woken = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(woken.status).toBe('queued');
    expect(woken.pendingApprovals).toBeUndefined();

    const events = await runEvents(app, id);
    expect(events.filter((event) => event.type === 'approval.requested').map((event) => event.data)).toEqual([
      write,
      client,
    ]);
    expect(events.filter((event) => event.type === 'approval.resolved').map((event) => event.data)).toEqual([
      { requestId: write.requestId, decision: 'approve', by: 'acme' },
      { requestId: client.requestId, decision: 'edit', arguments: { city: 'Bergen' }, by: 'acme' },
    ]);
  });

  it('refuses edited arguments the tool would refuse, naming the field, and keeps the request waiting', async () => {
    const { app } = await build();
    const id = await submit(
      app,
      ACME,
      replayRun(undefined, { tools: [weather], approval: { tools: ['*'] } }),
    );
    const [write, client] = await waitOnApprovals(app, id);
    const builtin = await decide(app, id, write.requestId, {
      decision: 'edit',
      arguments: { path: 'a.txt' },
    });
    expect(builtin.statusCode).toBe(400);
    expect(builtin.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_ARGUMENTS_INVALID' } });
    expect(builtin.json<{ error: { message: string } }>().error.message).toContain('`content`');
    const own = await decide(app, id, client.requestId, { decision: 'edit', arguments: { town: 'Bergen' } });
    expect(own.statusCode).toBe(400);
    expect(own.json<{ error: { message: string } }>().error.message).toMatch(/`city`|`town`/);
    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(run.pendingApprovals).toHaveLength(2);
  });

  it('refuses a malformed body, an unknown request, and another tenant (404), and stays healthy', async () => {
    const { app } = await build();
    const id = await submit(app, ACME, replayRun(undefined, { approval: { tools: ['write_file'] } }));
    const [write] = await waitOnApprovals(app, id);
    for (const body of [
      { decision: 'maybe' },
      { decision: 'edit' },
      { decision: 'approve', arguments: {} },
      { decision: 'reject', message: 'x'.repeat(4_001) },
      {},
    ]) {
      const refused = await decide(app, id, write.requestId, body);
      expect(refused.statusCode, JSON.stringify(body)).toBe(400);
    }
    const badId = await decide(app, id, 'clr_01jz3k', { decision: 'approve' });
    expect(badId.statusCode).toBe(400);
    expect(badId.json<{ error: { message: string } }>().error.message).toContain("an approval's request id");
    const unknown = await decide(app, id, newId('apr'), { decision: 'approve' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_UNKNOWN' } });
    const other = await decide(app, id, write.requestId, { decision: 'approve' }, BETA);
    expect(other.statusCode).toBe(404);
    expect(other.json()).toMatchObject({ error: { code: 'ERR_RUN_NOT_FOUND' } });
    const run = (await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME })).json<Run>();
    expect(run.pendingApprovals?.map((approval) => approval.requestId)).toContain(write.requestId);
    expect(await expectServing(app)).toContain(id);
  });

  it('says a decision came too late once the deadline passed', async () => {
    const { app } = await build();
    const id = await submit(app, ACME, replayRun(undefined, { approval: { tools: ['write_file'] } }));
    const [write] = await waitOnApprovals(app, id, 50);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const late = await decide(app, id, write.requestId, { decision: 'approve' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_EXPIRED' } });
  });
});

describe("a run's approval policy at submit", () => {
  it('is taken when well formed, and refused naming the field when a pattern or name is not', async () => {
    const { app } = await build();
    const post = (approval: unknown) =>
      app.inject({
        method: 'POST',
        url: '/v1/runs',
        headers: ACME,
        payload: { ...replayRun(), approval },
      });
    const fine = await post({
      tools: ['write_file', 'patch', 'github__*'],
      bash: { allow: ['^git (status|diff|log)\\b', '^ls\\b'], ask: ['.*'] },
      timeoutMs: 3_600_000,
      onTimeout: 'reject',
    });
    expect(fine.statusCode, fine.body).toBe(202);
    const lookahead = await post({ bash: { ask: ['^git(?= push)'] } });
    expect(lookahead.statusCode).toBe(400);
    expect(lookahead.json()).toMatchObject({ error: { code: 'ERR_APPROVAL_POLICY_INVALID' } });
    expect(lookahead.json<{ error: { message: string } }>().error.message).toContain('approval.bash.ask[0]');
    for (const approval of [
      { tools: ['git hub'] },
      { tools: ['a*b'] },
      { onTimeout: 'later' },
      { timeoutMs: 10 },
      { bash: { deny: ['x'] } },
      { bash: { ask: Array.from({ length: 33 }, () => 'x') } },
    ]) {
      const refused = await post(approval);
      expect(refused.statusCode, JSON.stringify(approval)).toBe(400);
    }
    expect(await expectServing(app)).toHaveLength(1);
  });
});

describe('an approval.requested webhook delivery', () => {
  it('carries a one-time answer URL and token that decide that call only, without an API key', async () => {
    const { app, config } = await build({ env: { TETHER_SECRETS_KEY: randomBytes(32).toString('base64') } });
    const hook = await app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: ACME,
      payload: {
        url: 'https://hooks.example.com/tether',
        events: ['approval.requested', 'approval.resolved'],
      },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const id = await submit(
      app,
      ACME,
      replayRun(undefined, { tools: [weather], approval: { tools: ['*'] } }),
    );
    const [write, client] = await waitOnApprovals(app, id);
    const dispatcher = new WebhookDispatcher({
      store: app.store,
      webhooks: app.webhooks,
      secrets: config.secrets,
      publicUrl: config.publicUrl,
    });
    await dispatcher.dispatch(id, 'acme');
    const [endpoint] = await app.webhooks.list('acme');
    const taken = (await app.webhooks.take('acme', endpoint?.id ?? '', 10, 60_000, false))?.deliveries ?? [];
    const payloads = taken.map((delivery) => JSON.parse(delivery.payload) as WebhookPayload);
    // One token for the run's deliveries of this dispatch, sealed with the stack's key.
    const token = config.secrets?.open(taken[0]?.token ?? '') as string;
    expect(token).toMatch(/^wat_/);
    // A run's deliveries go one at a time, in order: the first names where to decide its call.
    expect(payloads.map((payload) => [payload.type, payload.data, payload.answer?.url])).toEqual([
      ['approval.requested', write, `${config.publicUrl}/v1/runs/${id}/approvals/${write.requestId}`],
    ]);
    const withToken = (requestId: string, payload: object, bearer = token) =>
      app.inject({
        method: 'POST',
        url: `/v1/runs/${id}/approvals/${requestId}`,
        headers: { authorization: `Bearer ${bearer}` },
        payload,
      });
    // A token that is not this call's is a failed authentication, whatever exists.
    const madeUp = await withToken(
      write.requestId,
      { decision: 'approve' },
      `wat_${randomBytes(32).toString('base64url')}`,
    );
    expect([madeUp.statusCode, madeUp.json().error.code]).toEqual([401, 'ERR_ANSWER_TOKEN_INVALID']);
    const decided = await withToken(write.requestId, { decision: 'reject', message: 'not now' });
    expect(decided.statusCode, decided.body).toBe(200);
    const again = await withToken(write.requestId, { decision: 'approve' });
    expect([again.statusCode, again.json().error.code]).toEqual([409, 'ERR_ANSWER_TOKEN_USED']);
    // The token of the run's delivery decides each call of it once.
    const other = await withToken(client.requestId, { decision: 'approve' });
    expect(other.statusCode, other.body).toBe(200);
    const events = await runEvents(app, id);
    expect(events.filter((event) => event.type === 'approval.resolved').map((event) => event.data)).toEqual([
      { requestId: write.requestId, decision: 'reject', message: 'not now', by: 'answer_token' },
      { requestId: client.requestId, decision: 'approve', by: 'answer_token' },
    ]);
  });
});
