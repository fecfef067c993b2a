// pnpm bench:webhooks — what a webhook delivery costs, part by part, for BENCH_RUNS completed runs
// of one tenant with one `*` endpoint: the dispatch (the run's events read, its deliveries recorded:
// two scripts), then the pump sending them (take, HTTP POST, settle) to a receiver in a child process
// that answers 200 at once. One JSON line with the CPU µs per delivery of this process (the dispatcher
// and the pump, as a worker runs them) and of Redis, for each part. Needs `pnpm build`.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { DueSignals } from '../apps/worker/dist/webhooks/due-signals.js';
import { createPump } from '../apps/worker/dist/webhooks/pump.js';
import { createOutboundRequest } from '../packages/outbound/dist/index.js';
import { newId } from '../packages/protocol/dist/index.js';
import { createKeys, WEBHOOK_QUEUE_NAME } from '../packages/store/dist/redis/index.js';
import { RunStore } from '../packages/store/dist/runs/index.js';
import { WebhookDispatcher, WebhookStore } from '../packages/store/dist/webhooks/index.js';
import { Redis } from '../packages/store/node_modules/ioredis/built/index.js';
import { benchRedis, cpuMicros } from './lib/stack.mjs';

const { Worker } = createRequire(new URL('../packages/store/package.json', import.meta.url))('bullmq');
const RUNS = Number(process.env.BENCH_RUNS ?? 3_000);
const LANES = 50;

const server = await benchRedis();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });
const bullmq = new Redis(server.url, { maxRetriesPerRequest: null });
const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
const keys = createKeys(`{bench-wh-${process.pid}}`);
const store = new RunStore({ redis, keys });
const webhooks = new WebhookStore({ redis, queueConnection: bullmq, keys });
const secrets = { seal: (text) => `s:${text}`, open: (text) => text.slice(2) };
const signals = new DueSignals();
const dispatcher = new WebhookDispatcher({
  store,
  webhooks,
  secrets,
  publicUrl: 'http://127.0.0.1:3000',
  onDue: (tenant, endpointId) => signals.notify(tenant, endpointId),
});

// The receiver, in a process of its own: its CPU is not counted here.
const receiver = spawn(
  process.execPath,
  [
    '-e',
    `let n=0;require('node:http').createServer((q,s)=>{q.resume();q.on('end',()=>{n++;s.writeHead(200).end();})}).listen(0,'127.0.0.1',function(){console.log(this.address().port)});process.on('message',()=>process.send(n));`,
  ],
  { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
);
const port = await new Promise((resolve) => receiver.stdout.once('data', (line) => resolve(Number(line))));
const received = () =>
  new Promise((resolve) => {
    receiver.once('message', resolve);
    receiver.send('count');
  });

const tenant = 'bench';
await webhooks.create(tenant, {
  url: `http://127.0.0.1:${port}/hooks`,
  events: ['*'],
  secret: secrets.seal(`whsec_${Buffer.alloc(32, 1).toString('base64')}`),
});

/** CPU µs of this process and of Redis while `work` runs. */
async function measure(work) {
  const self = process.cpuUsage();
  const redisBefore = cpuMicros(redisPid);
  await work();
  const used = process.cpuUsage(self);
  return { self: used.user + used.system, redis: cpuMicros(redisPid) - redisBefore };
}

/** `count` completed runs, outside the measure. */
async function completedRuns(count) {
  const ids = [];
  for (let i = 0; i < count; i++) {
    const id = newId('run');
    const spec = { input: 'x', model: { provider: 'replay', script: [] } };
    await store.create({ id, tenant, spec, createdAtMs: Date.now(), queue: keys.queuePrefix });
    await store.finalize(id, { status: 'completed', output: 'ok' });
    ids.push(id);
  }
  return ids;
}

async function lanes(items, each) {
  let next = 0;
  await Promise.all(
    Array.from({ length: LANES }, async () => {
      while (next < items.length) await each(items[next++]);
    }),
  );
}

const warm = await completedRuns(500);
const pump = createPump({
  store: webhooks,
  secrets,
  send: createOutboundRequest({ allowHttp: true, allowPrivate: true }),
  perEndpoint: 16,
  log: { info() {}, warn() {} },
  waitForDue: (t, e, ms) => signals.wait(t, e, ms),
});
const worker = new Worker(WEBHOOK_QUEUE_NAME, pump.process, {
  connection: bullmq,
  prefix: keys.webhookQueuePrefix,
  concurrency: 4,
});
await lanes(warm, (id) => dispatcher.dispatch(id, tenant));
while ((await received()) < warm.length) await new Promise((r) => setTimeout(r, 20));

const ids = await completedRuns(RUNS);
await worker.pause();
const dispatch = await measure(() => lanes(ids, (id) => dispatcher.dispatch(id, tenant)));
worker.resume();
const before = await received();
const started = performance.now();
const send = await measure(async () => {
  while ((await received()) - before < RUNS) await new Promise((r) => setTimeout(r, 5));
});
const seconds = (performance.now() - started) / 1000;
const per = (value) => Math.round(value / RUNS);
console.log(
  JSON.stringify({
    bench: 'webhooks',
    deliveries: RUNS,
    dispatch_cpu_us: { process: per(dispatch.self), redis: per(dispatch.redis) },
    send_cpu_us: { process: per(send.self), redis: per(send.redis) },
    deliveries_per_s: Math.round(RUNS / seconds),
  }),
);
await worker.close();
await webhooks.close();
receiver.kill();
redis.disconnect();
bullmq.disconnect();
await server.stop();
