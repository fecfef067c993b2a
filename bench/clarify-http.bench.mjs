// pnpm bench:clarify-http — the clarify round trip as a client sees it: one API and two worker
// processes; the client follows the run's SSE stream (GET /v1/runs/:id/events) and answers each
// `clarify.requested` with POST /v1/runs/:id/clarify/:requestId. Timed from sending the answer's
// POST to reading the resumed attempt's first event (`attempt.started`) on the stream, with the
// split at `clarify.answered` (the answer's own event) and the POST's response. One JSON line:
// p50/p99 over many rounds. With BENCH_CLIENT=sdk the client is @tether/client (fetch) instead of
// node:http. Needs `pnpm build`.
import { Agent, request } from 'node:http';
import { TetherClient } from '../packages/client/dist/index.js';
import { freePort, startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, percentile, postJson, tempDir } from './lib/stack.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
const CLIENT = process.env.BENCH_CLIENT ?? 'http';
const WARMUP = 20;
const KEY = 'sk_bench_clarify_http_0123456789';

const redisServer = await benchRedis();
const workspaces = await tempDir('clarify-http');
const prefix = `{bench-clarify-http-${process.pid}}`;
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const auth = { authorization: `Bearer ${KEY}` };
const stack = await startStack({
  redis: redisServer.url,
  port,
  workers: 2,
  workerNodeFlags: [],
  env: {
    TETHER_QUEUE_PREFIX: prefix,
    TETHER_WORKSPACE_ROOT: workspaces.dir,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_API_KEYS: `bench:${KEY}`,
    TETHER_RATE_LIMIT_MAX: '1000000',
    TETHER_WORKER_CONCURRENCY: '4',
    TETHER_SANDBOX: 'none',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  },
  maxOutputChars: 8_000,
});
const agent = new Agent({ keepAlive: true });

/** POSTs `body` (JSON) to the API; resolves with the parsed answer if its status is `status`. */
const post = (path, body, status) => postJson(`${base}${path}`, { agent, headers: auth, body, status });

/** Follows the run's SSE stream: `next(type)` resolves with the time the next such event was read. */
function followHttp(runId) {
  const waiters = [];
  const req = request(`${base}/v1/runs/${runId}/events`, {
    agent: false,
    headers: { ...auth, accept: 'text/event-stream' },
  });
  req.on('response', (res) => {
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk) => {
      const now = performance.now();
      buffer += chunk;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const type = /\nevent: ([^\n]+)/.exec(`\n${block}`)?.[1];
        const data = /\ndata: ([^\n]*)/.exec(`\n${block}`)?.[1];
        const index = waiters.findIndex((waiter) => waiter.type === type);
        if (index >= 0) waiters.splice(index, 1)[0].resolve({ at: now, event: data && JSON.parse(data) });
      }
    });
  });
  req.end();
  return {
    next: (type) => new Promise((resolve) => waiters.push({ type, resolve })),
    close: () => req.destroy(),
  };
}

const sdk = new TetherClient({ baseUrl: base, apiKey: KEY, retry: { limit: 0 } });

/** The same with the SDK's stream. */
function followSdk(runId) {
  const waiters = [];
  const controller = new AbortController();
  (async () => {
    for await (const event of sdk.stream(runId, { signal: controller.signal })) {
      const now = performance.now();
      const index = waiters.findIndex((waiter) => waiter.type === event.type);
      if (index >= 0) waiters.splice(index, 1)[0].resolve({ at: now, event });
    }
  })().catch(() => {});
  return {
    next: (type) => new Promise((resolve) => waiters.push({ type, resolve })),
    close: () => controller.abort(),
  };
}

const follow = CLIENT === 'sdk' ? followSdk : followHttp;
const answer = (runId, requestId, text) =>
  CLIENT === 'sdk'
    ? sdk.answer(runId, requestId, text)
    : post(`/v1/runs/${runId}/clarify/${requestId}`, { answer: text }, 200);

const turns = WARMUP + ROUNDS;
const script = [
  ...Array.from({ length: turns }, (_, i) => ({
    toolCalls: [{ name: 'clarify', arguments: { question: `q${i}` } }],
  })),
  { content: 'done' },
];
const { id: runId } = await post(
  '/v1/runs',
  {
    input: 'round trips',
    model: { provider: 'replay', script },
    limits: { maxSteps: turns + 1 },
    clarify: { timeoutMs: 600_000 },
  },
  202,
);
const stream = follow(runId);
const total = [];
const toAnswered = [];
const answeredToResumed = [];
const toResponse = [];
let requested = stream.next('clarify.requested');
for (let i = 0; i < turns; i++) {
  const { event } = await requested;
  requested = stream.next('clarify.requested');
  const answered = stream.next('clarify.answered');
  const resumed = stream.next('attempt.started');
  const sent = performance.now();
  await answer(runId, event.data.requestId, `a${i}`);
  const responded = performance.now();
  const [{ at: answeredAt }, { at: resumedAt }] = await Promise.all([answered, resumed]);
  if (i < WARMUP) continue;
  total.push(resumedAt - sent);
  toAnswered.push(answeredAt - sent);
  answeredToResumed.push(resumedAt - answeredAt);
  toResponse.push(responded - sent);
}
stream.close();

const ms = (samples, p) => Number(percentile(samples, p).toFixed(3));
const p50 = ms(total, 50);
const p99 = ms(total, 99);
console.log(
  JSON.stringify({
    bench: 'clarify-http',
    rounds: total.length,
    workers: 2,
    client: CLIENT,
    p50_ms: p50,
    p90_ms: ms(total, 90),
    p99_ms: p99,
    max_ms: Number(Math.max(...total).toFixed(3)),
    post_to_response_p50_ms: ms(toResponse, 50),
    post_to_answered_event_p50_ms: ms(toAnswered, 50),
    answered_event_to_resumed_p50_ms: ms(answeredToResumed, 50),
    target_p50_ms: 5,
    target_p99_ms: 20,
    pass: p50 <= 5 && p99 <= 20,
  }),
);

agent.destroy();
await stack.stop();
await redisServer.stop();
await workspaces.remove();
