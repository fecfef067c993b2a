/**
 * An approval policy's approver with real worker processes and no API: the webhook endpoint the
 * policy names gets each approval request (whatever it subscribes to), and a 2xx answer whose body
 * is a decision decides the call, by `approver:<endpoint id>`; the run resumes, and the other
 * endpoints are told. Anything else leaves the request waiting for a person: a 500, an answer
 * slower than the attempt's timeout, a 2xx whose body is not a decision. A failed attempt is
 * retried, and the retry's decision still counts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretBox } from '@tether/config';
import type { PendingApproval, RunEvent, WebhookPayload } from '@tether/protocol';
import { WebhookStore } from '@tether/store/webhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { call, type Deployment, TENANT, type TestHooks, until, useDeployments } from './harness.js';

const deploy = useDeployments();
const key = SecretBox.newKey();
const box = new SecretBox(Buffer.from(key, 'base64'));
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

/** No retry within a test, unless it asks for one. */
const NO_RETRY_MS = 600_000;

/** What a receiver does with a request: answer with a status and a body, or never answer. */
type Fate = { status: number; body?: string } | 'hang';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A receiving server: `answer` decides each request's fate; `received` holds their payloads, in order. */
async function receiver(answer: (payload: WebhookPayload, tries: number) => Fate = () => ({ status: 204 })) {
  const received: WebhookPayload[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      const payload = JSON.parse(body) as WebhookPayload;
      received.push(payload);
      const fate = answer(payload, received.filter((p) => p.id === payload.id).length);
      if (fate === 'hang') hanging.push(response);
      else response.writeHead(fate.status, { 'content-type': 'application/json' }).end(fate.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    for (const response of hanging) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, received };
}

/** A deployment with a worker that delivers webhooks to the test's receivers. */
async function approving(name: string, options: { backoffMs?: number; hooks?: TestHooks } = {}) {
  const d = await deploy(name);
  const webhooks = new WebhookStore({ redis: d.redis, keys: d.keys });
  cleanups.push(() => webhooks.close());
  await d.startWorker(
    {
      TETHER_SECRETS_KEY: key,
      TETHER_WEBHOOK_ALLOW_HTTP: '1',
      TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
      TETHER_WEBHOOK_BACKOFF_MS: String(options.backoffMs ?? NO_RETRY_MS),
    },
    options.hooks,
  );
  /** An endpoint of the tenant to `url`, for `events`. */
  const endpoint = async (url: string, events: string[]) => {
    const created = await webhooks.create(TENANT, { url, events, secret: box.seal(SECRET) });
    if (created === 'limit') throw new Error('limit');
    return created.id;
  };
  /** The delivery of the approval request to `endpointId`, as the endpoint's log shows it. */
  const requestDelivery = async (endpointId: string) =>
    (await webhooks.deliveries(TENANT, endpointId, { limit: 10 })).deliveries.find(
      (delivery) => delivery.type === 'approval.requested',
    );
  return { d, endpoint, requestDelivery };
}

/** A run whose one write_file call waits for `approver`'s decision; its request, once asked. */
async function submitHeld(d: Deployment, approver: string, path = 'held.txt') {
  const runId = await d.submit(
    [{ toolCalls: [call('write_file', { path, content: 'from the model\n' })] }, { content: 'done' }],
    { approval: { tools: ['write_file'], approver } },
  );
  const requested = await d.waitForEvent(runId, 'approval.requested');
  return { runId, request: requested.data as PendingApproval };
}

const resolvedOf = (events: RunEvent[]) =>
  events.filter((e) => e.type === 'approval.resolved').map((e) => e.data);
const resultsOf = (events: RunEvent[]) =>
  events
    .filter((e) => e.type === 'tool.result')
    .map((e) => e.data as { callId: string; name: string; ok: boolean; content: string });

/**
 * The request still waits: the run has no decision and runs nothing; then a person's decision
 * (through RunService, as the API route takes it) decides it and the run completes.
 */
async function expectWaitingThenDecidedByPerson(d: Deployment, runId: string, requestId: string) {
  const events = await d.store.readEvents(runId);
  expect(resolvedOf(events)).toEqual([]);
  expect(resultsOf(events)).toEqual([]);
  expect((await d.store.get(runId))?.status).toBe('waiting_for_input');
  await d.service.decide(TENANT, runId, requestId, { decision: 'approve', by: TENANT });
  await d.waitForEvent(runId, 'run.completed');
  const after = await d.store.readEvents(runId);
  expect(resolvedOf(after)).toEqual([{ requestId, decision: 'approve', by: TENANT }]);
  expect(resultsOf(after).map(({ name, ok }) => ({ name, ok }))).toEqual([{ name: 'write_file', ok: true }]);
}

describe('an approval policy’s approver endpoint', () => {
  it('that answers 200 with approve decides the call: it runs once, and the other endpoints are told', async () => {
    const { d, endpoint, requestDelivery } = await approving('approver-approve');
    const hook = await receiver((payload) =>
      payload.type === 'approval.requested'
        ? { status: 200, body: '{"decision":"approve"}' }
        : { status: 204 },
    );
    const watcher = await receiver();
    // The approver subscribes to run.completed only: the request reaches it all the same.
    const approver = await endpoint(hook.url, ['run.completed']);
    await endpoint(watcher.url, ['approval.resolved']);
    const { runId, request } = await submitHeld(d, approver);
    expect(request.approver).toBe(approver);
    await d.waitForEvent(runId, 'run.completed');

    const events = await d.store.readEvents(runId);
    const by = `approver:${approver}`;
    expect(resolvedOf(events)).toEqual([{ requestId: request.requestId, decision: 'approve', by }]);
    const results = resultsOf(events);
    expect(results.map(({ name, ok }) => ({ name, ok }))).toEqual([{ name: 'write_file', ok: true }]);
    // One request, sent with its answer token; the watcher hears the approver's decision.
    const asked = hook.received.filter((p) => p.type === 'approval.requested');
    expect(asked).toHaveLength(1);
    expect(asked[0]?.data).toEqual(request);
    expect(asked[0]?.answer?.token).toMatch(/^wat_/);
    await until(() => watcher.received.length > 0, 'approval.resolved at the watcher');
    expect(watcher.received.map((p) => [p.type, p.data])).toEqual([
      ['approval.resolved', { requestId: request.requestId, decision: 'approve', by }],
    ]);
    expect(await requestDelivery(approver)).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('that answers 200 with edit decides the call with its arguments', async () => {
    const { d, endpoint } = await approving('approver-edit');
    const edited = { path: 'edited.txt', content: 'from the approver\n' };
    const hook = await receiver((payload) =>
      payload.type === 'approval.requested'
        ? { status: 200, body: JSON.stringify({ decision: 'edit', arguments: edited }) }
        : { status: 204 },
    );
    const approver = await endpoint(hook.url, ['run.completed']);
    const { runId, request } = await submitHeld(d, approver);
    await d.waitForEvent(runId, 'run.completed');

    const events = await d.store.readEvents(runId);
    expect(resolvedOf(events)).toEqual([
      { requestId: request.requestId, decision: 'edit', arguments: edited, by: `approver:${approver}` },
    ]);
    const results = resultsOf(events);
    expect(results).toHaveLength(1);
    expect(results[0]?.ok).toBe(true);
    expect(results[0]?.content).toContain(
      `A reviewer changed the arguments before the call ran; it ran with: ${JSON.stringify(edited)}`,
    );
  });

  it('that answers 500 leaves the request waiting for a person, who decides it', async () => {
    const { d, endpoint, requestDelivery } = await approving('approver-fails');
    const hook = await receiver(() => ({ status: 500, body: '{"decision":"approve"}' }));
    const approver = await endpoint(hook.url, ['run.completed']);
    const { runId, request } = await submitHeld(d, approver);
    // The attempt is recorded after any decision it would take: once it is, none was.
    await until(async () => (await requestDelivery(approver))?.attempts === 1, 'the failed attempt');
    expect(await requestDelivery(approver)).toMatchObject({ status: 'pending', lastStatus: 500 });
    await expectWaitingThenDecidedByPerson(d, runId, request.requestId);
  });

  it('that does not answer within the timeout leaves the request waiting for a person', async () => {
    const { d, endpoint, requestDelivery } = await approving('approver-timeout', {
      hooks: { webhookTimeoutMs: 500 },
    });
    const hook = await receiver((payload) =>
      payload.type === 'approval.requested' ? 'hang' : { status: 204 },
    );
    const approver = await endpoint(hook.url, ['run.completed']);
    const { runId, request } = await submitHeld(d, approver);
    await until(async () => (await requestDelivery(approver))?.attempts === 1, 'the timed-out attempt');
    const delivery = await requestDelivery(approver);
    expect(delivery).toMatchObject({ status: 'pending' });
    expect(delivery?.lastError).toMatch(/did not answer within 500 ms/);
    await expectWaitingThenDecidedByPerson(d, runId, request.requestId);
  });

  it('that answers 2xx with a body that is not a decision leaves the request waiting; the delivery is delivered', async () => {
    const { d, endpoint, requestDelivery } = await approving('approver-no-decision');
    const hook = await receiver(() => ({ status: 200, body: '{"ok":true}' }));
    const approver = await endpoint(hook.url, ['run.completed']);
    const { runId, request } = await submitHeld(d, approver);
    await until(async () => (await requestDelivery(approver))?.status === 'delivered', 'the delivery');
    await expectWaitingThenDecidedByPerson(d, runId, request.requestId);
  });

  it('that fails once then answers reject decides on the retry; a person after it is refused', async () => {
    const { d, endpoint, requestDelivery } = await approving('approver-retry', { backoffMs: 200 });
    const hook = await receiver((payload, tries) => {
      if (payload.type !== 'approval.requested') return { status: 204 };
      return tries === 1
        ? { status: 503 }
        : { status: 200, body: '{"decision":"reject","message":"the policy engine says no"}' };
    });
    const approver = await endpoint(hook.url, ['run.completed']);
    const { runId, request } = await submitHeld(d, approver);
    await d.waitForEvent(runId, 'run.completed');

    const events = await d.store.readEvents(runId);
    expect(resolvedOf(events)).toEqual([
      {
        requestId: request.requestId,
        decision: 'reject',
        message: 'the policy engine says no',
        by: `approver:${approver}`,
      },
    ]);
    const results = resultsOf(events);
    expect(results.map(({ name, ok }) => ({ name, ok }))).toEqual([{ name: 'write_file', ok: false }]);
    expect(results[0]?.content).toContain('the policy engine says no');
    expect(await requestDelivery(approver)).toMatchObject({ status: 'delivered', attempts: 2 });
    await expect(
      d.service.decide(TENANT, runId, request.requestId, { decision: 'approve', by: TENANT }),
    ).rejects.toMatchObject({ code: 'ERR_APPROVAL_ALREADY_DECIDED' });
  });
});
