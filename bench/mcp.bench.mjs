// pnpm bench:mcp — what the worker's path adds to a remote MCP tool call. server-everything (the
// reference server, not ours) in its Streamable HTTP mode on a free port of 127.0.0.1; its `echo`
// tool called CALLS times through the worker's path (the built @tether/mcp McpToolset's tool run by
// executeTool: the arguments checked with Ajv, the request through @tether/outbound's fetch with its
// address check, timeout and byte cap, the result formatted for the model) and CALLS times by the
// raw SDK client (Client over StreamableHTTPClientTransport with Node's fetch), interleaved one by
// one, each side on a connection made once. Also: the run start's listing of the server, a fresh
// connection and tools/list (LISTS times), and from the worker's cache. One JSON line; goal: added
// median <= 2 ms. Needs `pnpm build`.

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { ListingCache, McpToolset } from '../packages/mcp/dist/index.js';
import { Client } from '../packages/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
import { StreamableHTTPClientTransport } from '../packages/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js';
import { freePort } from '../packages/testing/dist/index.js';
import { executeTool } from '../packages/tools/dist/index.js';
import { median, percentile, tempDir } from './lib/stack.mjs';

const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const LISTS = Number(process.env.BENCH_LISTS ?? 30);
const WARMUP = 50;
const TARGET_ADDED_MS = 2;
const ms = (value) => Number(value.toFixed(3));

const require = createRequire(new URL('../packages/mcp/package.json', import.meta.url));
const entry = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const port = await freePort();
const server = spawn(process.execPath, [entry, 'streamableHttp'], {
  env: { PATH: process.env.PATH, PORT: String(port) },
  stdio: ['ignore', 'ignore', 'pipe'],
});
await new Promise((resolve, reject) => {
  let said = '';
  server.stderr.on('data', (chunk) => {
    said += chunk;
    if (/listening on port/.test(said)) resolve();
  });
  server.on('exit', (code) => reject(new Error(`server-everything exited (${code}): ${said}`)));
});
const url = `http://127.0.0.1:${port}/mcp`;

const workspace = await tempDir('mcp');
const controller = new AbortController();
const options = (cache) => ({
  limits: {
    policy: { allowHttp: true, allowPrivate: true },
    callTimeoutMs: 60_000,
    connectTimeoutMs: 10_000,
    maxResponseBytes: 4 * 1024 * 1024,
  },
  cache,
  context: {
    runId: 'run_bench',
    workspace: workspace.dir,
    emit() {},
    signal: controller.signal,
    todos: { get: () => [], set() {} },
    sandbox: 'none',
  },
  taken: [],
});
const spec = [{ name: 'everything', url, headers: {} }];

// The run start's listing: a connection and tools/list each time, then from the worker's cache.
const listed = [];
const fromCache = [];
const cache = new ListingCache({ ttlMs: 60_000 });
for (let i = 0; i < LISTS; i++) {
  let started = performance.now();
  const set = await McpToolset.open(spec, options(new ListingCache({ ttlMs: 0 })));
  listed.push(performance.now() - started);
  await set.close();
  await McpToolset.open(spec, options(cache)).then((cached) => cached.close());
  started = performance.now();
  const cached = await McpToolset.open(spec, options(cache));
  fromCache.push(performance.now() - started);
  await cached.close();
}

// The two sides, each on one connection.
const toolset = await McpToolset.open(spec, options(cache));
const echo = toolset.tools.find((tool) => tool.name === 'everything__echo');
const raw = new Client({ name: 'bench', version: '1.0.0' });
await raw.connect(new StreamableHTTPClientTransport(new URL(url)));
const args = { message: 'hello from the bench' };
const viaWorker = async () => {
  const result = await executeTool(echo, JSON.stringify(args), { callId: 'c', signal: controller.signal });
  if (!result.ok) throw new Error(result.content);
};
const viaSdk = async () => {
  const result = await raw.callTool({ name: 'echo', arguments: args });
  if (result.isError) throw new Error('echo failed');
};

const worker = [];
const sdk = [];
for (let i = 0; i < WARMUP + CALLS; i++) {
  // Alternate which side goes first, so neither always follows the other.
  const order = i % 2 === 0 ? [viaWorker, viaSdk] : [viaSdk, viaWorker];
  for (const side of order) {
    const started = performance.now();
    await side();
    const took = performance.now() - started;
    if (i >= WARMUP) (side === viaWorker ? worker : sdk).push(took);
  }
}

const added = median(worker) - median(sdk);
const pass = added <= TARGET_ADDED_MS;
console.log(
  JSON.stringify({
    bench: 'mcp',
    calls: CALLS,
    sdk_call_median_ms: ms(median(sdk)),
    sdk_call_p99_ms: ms(percentile(sdk, 99)),
    worker_call_median_ms: ms(median(worker)),
    worker_call_p99_ms: ms(percentile(worker, 99)),
    added_median_ms: ms(added),
    lists: LISTS,
    start_list_median_ms: ms(median(listed)),
    start_list_cached_median_ms: ms(median(fromCache)),
    tools_offered: toolset.tools.length,
    target_added_ms: TARGET_ADDED_MS,
    pass,
  }),
);
if (!pass) process.exitCode = 1;

await toolset.close();
await raw.close();
server.kill('SIGTERM');
await workspace.remove();
