/**
 * Test only: a worker process whose attempts hold a window of their timing open, for a test to act
 * in (kill -9 the worker, cancel the run), or whose webhook attempts time out sooner. It starts the
 * built worker (`dist/`) as `main.ts` does, configured by the same environment, and passes
 * `startWorker` hooks and options made from its own arguments; a deployment runs `dist/main.js`,
 * which passes none. The tests start it through the harness (`startWorker(env, hooks)`).
 *
 *   --hold-before-tool-request  an attempt that asks the client for tool outputs stops for good
 *                               after saving its checkpoint, before the requests are recorded
 *   --hold-capped-ms <ms>       an attempt over its tenant's cap waits this long, its run in line
 *                               and its job still taken, before its job is delayed
 *   --webhook-timeout-ms <ms>   a webhook attempt ends as timed out after this long (not 10 s)
 *
 * Each hold logs a `test hold: …` line when it starts, for the test to wait for.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadWorkerConfig, startWorker } from '../dist/index.js';

const { values } = parseArgs({
  options: {
    'hold-before-tool-request': { type: 'boolean', default: false },
    'hold-capped-ms': { type: 'string', default: '0' },
    'webhook-timeout-ms': { type: 'string', default: '0' },
  },
});
/** A whole number of ms from the option `name` (0 when not given). */
function msOf(name) {
  const ms = Number(values[name]);
  if (!Number.isInteger(ms) || ms < 0)
    throw new Error(`--${name} must be a whole number of ms, got ${values[name]}`);
  return ms;
}
const holdCappedMs = msOf('hold-capped-ms');
const webhookTimeoutMs = msOf('webhook-timeout-ms');

/** @type {import('../dist/index.js').WorkerHooks} */
const hooks = {};
if (values['hold-before-tool-request']) {
  hooks.beforeToolRequest = async ({ log }, calls) => {
    log.warn({ calls: calls.length }, 'test hold: before requestToolCalls');
    // For good: the test kills the worker in this window.
    await new Promise(() => {});
  };
}
if (holdCappedMs > 0) {
  hooks.beforeCappedDelay = async ({ log }) => {
    log.warn({ ms: holdCappedMs }, 'test hold: over the cap, before the delay');
    await new Promise((resolve) => setTimeout(resolve, holdCappedMs));
  };
}

const config = loadWorkerConfig();
const logger = pino({
  name: 'tether-worker',
  level: config.logLevel,
  base: { workerId: config.workerId, pid: process.pid, hostname: hostname() },
});
const worker = startWorker(config, logger, {
  hooks,
  ...(webhookTimeoutMs > 0 ? { webhookTimeoutMs } : {}),
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    worker.close().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  });
}
worker.ready.catch((error) => {
  logger.fatal({ err: error }, 'worker could not start');
  process.exit(1);
});
