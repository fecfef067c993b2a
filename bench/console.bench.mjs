// pnpm bench:console — the web console's two budgets (issue 18), one JSON line each:
// - the initial JavaScript, gzipped: every script and module preload that apps/console/dist/index.html
//   loads, each gzipped (zlib's default level) and summed; the budget is 150 KB;
// - the render time of a 5,000-event run: a replay run that asks a question, 5,000 events appended
//   to its log with RunStore (apps/console/test/long-run.mjs, as the browser test does), then
//   answered. Headless Chromium (playwright-core, /usr/bin/chromium, the flags of docs/console.md)
//   opens the run's page, and the time is the page's own clock (performance.now(), from navigation
//   start) when the event list's last row, "Completed", is drawn: HTML, JavaScript, the stream of
//   5,000 events and the render of the page (the trace and the event list, both virtualised). Median of 5 (BENCH_ROUNDS), each in a fresh tab; the budget is 1 s.
// Needs `pnpm build` (the API's dist/ and the console's). REDIS_URL, or a redis-server on PATH.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { chromium } from '../apps/console/node_modules/playwright-core/index.mjs';
import { CHROMIUM_FLAGS, CHROMIUM_PATH } from '../apps/console/test/chromium.mjs';
import { appendLongRun, LONG_RUN_EVENTS } from '../apps/console/test/long-run.mjs';
import { TetherClient } from '../packages/client/dist/index.js';
import { createKeys, createRedisConnection } from '../packages/store/dist/redis/index.js';
import { RunStore } from '../packages/store/dist/runs/index.js';
import { startStack } from '../packages/testing/dist/scripts.js';
import { benchRedis, median, ROOT, tempDir } from './lib/stack.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const DIST = join(ROOT, 'apps/console/dist');

/** The scripts index.html loads at once (its module scripts and module preloads), gzipped. */
function initialJavaScript() {
  const html = readFileSync(join(DIST, 'index.html'), 'utf8');
  const urls = [
    ...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g),
    ...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g),
  ].map((match) => match[1]);
  const files = urls.map((url) => {
    const bytes = readFileSync(join(DIST, url.replace(/^\/console\//, '')));
    return { file: url, bytes: bytes.length, gzipBytes: gzipSync(bytes).length };
  });
  return {
    bench: 'console',
    metric: 'initial_js_gzip_bytes',
    value: files.reduce((sum, file) => sum + file.gzipBytes, 0),
    raw_bytes: files.reduce((sum, file) => sum + file.bytes, 0),
    budget_bytes: 150 * 1024,
    files: files.map((file) => file.file),
  };
}

console.log(JSON.stringify(initialJavaScript()));

const key = 'sk_bench_console_0123456789';
const prefix = `{bench-console-${process.pid}}`;
const redisServer = await benchRedis();
const workspace = await tempDir('console');
const profile = await tempDir('console-chromium');
const stack = await startStack({
  redis: redisServer.url,
  env: {
    TETHER_QUEUE_PREFIX: prefix,
    TETHER_ALLOW_REPLAY: '1',
    TETHER_SANDBOX: 'none',
    TETHER_WORKSPACE_ROOT: workspace.dir,
    TETHER_API_KEYS: `bench:${key}`,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
  },
  maxOutputChars: 8_000,
});
const redis = createRedisConnection({
  url: redisServer.url,
  name: 'bench-console',
  mode: 'wait',
  onError: () => {},
});
const browser = await chromium.launchPersistentContext(profile.dir, {
  executablePath: CHROMIUM_PATH,
  args: CHROMIUM_FLAGS,
  headless: true,
});
try {
  const base = stack.urls[0];
  const client = new TetherClient({ baseUrl: base, apiKey: key });
  const { id } = await client.submit({
    input: 'a long run',
    model: {
      provider: 'replay',
      script: [
        { toolCalls: [{ name: 'clarify', arguments: { question: 'Carry on?', choices: ['yes'] } }] },
        { content: 'carried on' },
      ],
    },
  });
  let requestId;
  for await (const event of client.stream(id)) {
    if (event.type === 'clarify.requested') {
      requestId = event.data.requestId;
      break;
    }
  }
  await appendLongRun(new RunStore({ redis, keys: createKeys(prefix) }), id);
  await client.answer(id, requestId, 'yes');
  const run = await client.wait(id);
  if (run.status !== 'completed') throw new Error(`the long run ended ${run.status}`);

  const times = [];
  let rows = 0;
  let traceRows = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const page = await browser.newPage();
    // Signed in once per tab (the key lives in the tab's sessionStorage): not part of the time.
    await page.goto(`${base}/console/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor();
    await page.goto(`${base}/console/runs/${id}`);
    const handle = await page.waitForFunction(
      () => {
        const last = [...document.querySelectorAll('li.timeline-row')].at(-1);
        if (!last?.textContent?.endsWith('Completed')) return false;
        return {
          at: performance.now(),
          rows: document.querySelectorAll('li.timeline-row').length,
          traceRows: document.querySelectorAll('li.trace-row').length,
        };
      },
      undefined,
      { polling: 'raf', timeout: 60_000 },
    );
    const { at, rows: drawn, traceRows: traced } = await handle.jsonValue();
    times.push(at);
    rows = drawn;
    traceRows = traced;
    await page.close();
  }
  console.log(
    JSON.stringify({
      bench: 'console',
      metric: 'render_long_run_ms',
      events: LONG_RUN_EVENTS,
      median_ms: Math.round(median(times)),
      runs_ms: times.map(Math.round),
      rows_in_dom: rows,
      trace_rows_in_dom: traceRows,
      budget_ms: 1_000,
    }),
  );
} finally {
  await browser.close();
  redis.disconnect();
  await stack.stop();
  await redisServer.stop();
  await workspace.remove();
  await profile.remove();
}
