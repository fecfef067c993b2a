/**
 * Webhooks end to end, over real ports: an API process, worker processes and
 * a receiving HTTP server of the test's. Each delivery is verified with the
 * `standardwebhooks` library (not with Tether's code); a run's events arrive
 * in order, an attempt that fails is retried after the backoff with the same
 * message id, the answer token of `clarify.requested` answers the question
 * with no API key (once), and a worker killed with -9 in the middle of a
 * delivery loses nothing: another worker sends it again.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebhookPayload, WebhookWithSecret } from '@tether/protocol';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { API_KEYS } from './helper.js';
import { call, deployment, type Shared, startApi, startWorker, stopAll } from './processes.js';

/** What the receiver got: each request's headers and body, in arrival order. */
interface Received {
  headers: Record<string, string>;
  body: string;
  payload: WebhookPayload;
  at: number;
}

/**
 * A receiving server: `answer` decides each request's fate (a status, or 'hang' to never answer);
 * `next(match)` waits for a request that matches.
 */
async function receiver(answer: (got: Received, all: Received[]) => number | 'hang' = () => 204) {
  const received: Received[] = [];
  const waiting: { match: (r: Received) => boolean; resolve: (r: Received) => void }[] = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      const got: Received = {
        headers: request.headers as Record<string, string>,
        body,
        payload: JSON.parse(body) as WebhookPayload,
        at: Date.now(),
      };
      received.push(got);
      const fate = answer(got, received);
      if (fate === 'hang') hanging.push(response);
      else response.writeHead(fate).end(fate >= 300 ? 'not now' : '');
      for (const waiter of waiting.splice(0)) {
        if (waiter.match(got)) waiter.resolve(got);
        else waiting.push(waiter);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  const next = (match: (r: Received) => boolean, timeoutMs = 20_000) => {
    const found = received.find(match);
    if (found) return Promise.resolve(found);
    return new Promise<Received>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`no matching delivery in ${timeoutMs} ms; got ${received.map((r) => r.payload.type)}`),
          ),
        timeoutMs,
      );
      waiting.push({
        match,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
      });
    });
  };
  cleanups.push(async () => {
    for (const response of hanging) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url, received, next };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async (context) => {
  await stopAll(context);
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const ENV = {
  TETHER_SECRETS_KEY: randomBytes(32).toString('base64'),
  TETHER_WEBHOOK_ALLOW_HTTP: '1',
  TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
  TETHER_WEBHOOK_BACKOFF_MS: '200',
  TETHER_LOCK_DURATION_MS: '2000',
  TETHER_STALLED_INTERVAL_MS: '500',
};

/** An API, then a worker that knows the API's URL (for `answer.url`). */
async function stack(shared: Shared) {
  const api = await startApi(shared, API_KEYS, 'api', ENV);
  const workerEnv = { ...ENV, TETHER_PUBLIC_URL: api.base };
  const worker = await startWorker(shared, 'worker-1', 4, workerEnv);
  return { api, worker, workerEnv };
}

/** Posts a client tool's output with the tenant's key; the status. */
async function postOutput(base: string, runId: string, requestId: string): Promise<number> {
  const path = `/v1/runs/${runId}/tool-outputs/${requestId}`;
  return (await call(base, 'POST', path, { output: 'deployed' })).status;
}

/** Verified as a receiver would: the library throws on a bad signature, an old timestamp, or another secret. */
function verify(secret: string, got: Received): WebhookPayload {
  return new Webhook(secret).verify(got.body, got.headers) as WebhookPayload;
}

describe('webhooks end to end', () => {
  it('sends a run’s events signed and in order, retries a failed attempt, and takes the answer token once', async () => {
    const shared = await deployment('webhooks-e2e');
    const { api } = await stack(shared);
    // The first attempt of clarify.answered fails: run.completed must wait for its retry.
    const hook = await receiver((got, all) => {
      const tries = all.filter((r) => r.headers['webhook-id'] === got.headers['webhook-id']).length;
      return got.payload.type === 'clarify.answered' && tries === 1 ? 503 : 204;
    });
    const created = await call<WebhookWithSecret>(api.base, 'POST', '/v1/webhooks', {
      url: hook.url,
      events: ['*'],
    });
    expect(created.status).toBe(201);
    const { secret } = created.body;
    const submitted = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
      input: 'ask',
      metadata: { ticket: 'T-1' },
      model: {
        provider: 'replay',
        script: [
          { toolCalls: [{ name: 'clarify', arguments: { question: 'Ship it?', choices: ['yes', 'no'] } }] },
          { toolCalls: [{ name: 'deploy', arguments: { env: 'prod' } }] },
          { content: 'shipped' },
        ],
      },
      tools: [
        {
          name: 'deploy',
          description: 'Deploys',
          parameters: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] },
        },
      ],
    });
    const runId = submitted.body.id;
    const asked = await hook.next((r) => r.payload.type === 'clarify.requested');
    const payload = verify(secret, asked);
    expect(payload).toMatchObject({
      id: asked.headers['webhook-id'],
      type: 'clarify.requested',
      runId,
      data: { question: 'Ship it?', choices: ['yes', 'no'] },
      run: { status: 'waiting_for_input', metadata: { ticket: 'T-1' } },
    });
    expect(() =>
      new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(asked.body, asked.headers),
    ).toThrow();
    const answer = payload.answer;
    if (!answer) throw new Error('no answer in clarify.requested');
    expect(answer.url).toBe(
      `${api.base}/v1/runs/${runId}/clarify/${(payload.data as { requestId: string }).requestId}`,
    );
    // No API key: the token alone answers, once.
    const bearer = { authorization: `Bearer ${answer.token}` };
    const path = new URL(answer.url).pathname;
    expect((await call(api.base, 'POST', path, { answer: 'yes' }, bearer)).status).toBe(200);
    const again = await call<{ error: { code: string } }>(api.base, 'POST', path, { answer: 'no' }, bearer);
    expect([again.status, again.body.error.code]).toEqual([409, 'ERR_ANSWER_TOKEN_USED']);
    // The client tool call (issue 20's tool.requested) reaches the endpoint too; its output resumes the run.
    const requested = await hook.next((r) => r.payload.type === 'tool.requested');
    const toolCall = verify(secret, requested).data as {
      requestId: string;
      name: string;
      arguments: unknown;
    };
    expect(toolCall).toMatchObject({ name: 'deploy', arguments: { env: 'prod' } });
    expect(await postOutput(api.base, runId, toolCall.requestId)).toBe(200);
    const done = await hook.next((r) => r.payload.type === 'run.completed');
    expect(verify(secret, done)).toMatchObject({ data: { output: 'shipped' }, run: { status: 'completed' } });
    const answered = hook.received.filter((r) => r.payload.type === 'clarify.answered');
    // In order: the retried clarify.answered (the same message id twice) before run.completed.
    expect(answered).toHaveLength(2);
    expect(answered[0]?.headers['webhook-id']).toBe(answered[1]?.headers['webhook-id']);
    expect((answered[1]?.at ?? 0) - (answered[0]?.at ?? 0)).toBeGreaterThanOrEqual(180);
    expect(hook.received.map((r) => r.payload.type)).toEqual([
      'clarify.requested',
      'clarify.answered',
      'clarify.answered',
      'tool.requested',
      'run.completed',
    ]);
    // The pump records a delivery as delivered after the receiver's answer: the log says so a moment
    // after the receiver has it (on a loaded machine, after the test's first look).
    const log = async () =>
      (
        await call<{
          data: { type: string; status: string; attempts: number; lastStatus: number }[];
        }>(api.base, 'GET', `/v1/webhooks/${created.body.id}/deliveries`)
      ).body.data.map(({ type, status, attempts, lastStatus }) => ({ type, status, attempts, lastStatus }));
    await expect.poll(log, { timeout: 10_000 }).toEqual([
      { type: 'run.completed', status: 'delivered', attempts: 1, lastStatus: 204 },
      { type: 'tool.requested', status: 'delivered', attempts: 1, lastStatus: 204 },
      { type: 'clarify.answered', status: 'delivered', attempts: 2, lastStatus: 204 },
      { type: 'clarify.requested', status: 'delivered', attempts: 1, lastStatus: 204 },
    ]);
  });

  it('sends a delivery again when its worker is killed with -9 in the middle of it', async () => {
    const shared = await deployment('webhooks-kill');
    const { api, worker, workerEnv } = await stack(shared);
    let first = true;
    const hook = await receiver(() => {
      // The first attempt hangs: its worker dies while it waits for the answer.
      if (first) {
        first = false;
        return 'hang';
      }
      return 200;
    });
    const created = await call<WebhookWithSecret>(api.base, 'POST', '/v1/webhooks', {
      url: hook.url,
      events: ['run.completed'],
    });
    const submitted = await call<{ id: string }>(api.base, 'POST', '/v1/runs', {
      input: 'x',
      model: { provider: 'replay', script: [{ content: 'done' }] },
    });
    const hung = await hook.next((r) => r.payload.runId === submitted.body.id);
    await worker.stop('SIGKILL');
    await startWorker(shared, 'worker-2', 4, workerEnv);
    const resent = await hook.next((r) => r !== hung && r.payload.runId === submitted.body.id);
    expect(resent.headers['webhook-id']).toBe(hung.headers['webhook-id']);
    expect(verify(created.body.secret, resent).type).toBe('run.completed');
    const delivered = async () => {
      const log = await call<{ data: { status: string }[] }>(
        api.base,
        'GET',
        `/v1/webhooks/${created.body.id}/deliveries`,
      );
      return log.body.data[0]?.status;
    };
    await expect.poll(delivered, { timeout: 5_000 }).toBe('delivered');
  });
});
