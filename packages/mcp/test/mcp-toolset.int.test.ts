/**
 * A run's MCP servers as tools, against real servers: server-everything (a
 * server no one here wrote) over Streamable HTTP on a free port, and a small
 * server of ours whose tools hang or answer too much. Stdio servers in the
 * run's sandbox are tested through the worker (apps/worker/test/mcp.int.test.ts).
 */
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RunEventInput } from '@tether/protocol';
import { executeTool, probeBwrap, type RunContext, type Tool } from '@tether/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListingCache, type McpLimits, type McpServerSpec, McpToolset } from '../src/index.js';
import { startEverythingHttp, startMisbehavingServer } from '../src/testing/servers.js';

const probe = await probeBwrap();
const sandbox = probe.ok ? ('bwrap' as const) : ('none' as const);

const limits: McpLimits = {
  policy: { allowHttp: true, allowPrivate: true },
  callTimeoutMs: 1_000,
  connectTimeoutMs: 10_000,
  maxResponseBytes: 200_000,
};

let base: string;
let everything: Awaited<ReturnType<typeof startEverythingHttp>>;
let misbehaving: Awaited<ReturnType<typeof startMisbehavingServer>>;
const events: RunEventInput[] = [];

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'tether-mcp-'));
  await chmod(base, 0o755);
  await mkdir(path.join(base, 'ws'));
  [everything, misbehaving] = await Promise.all([startEverythingHttp(), startMisbehavingServer()]);
});
afterAll(async () => {
  await Promise.all([everything?.stop(), misbehaving?.close()]);
  await rm(base, { recursive: true, force: true });
});

function context(signal = new AbortController().signal): RunContext {
  return {
    runId: 'run_mcp_test',
    workspace: path.join(base, 'ws'),
    emit: (event) => events.push(event),
    signal,
    todos: { get: () => [], set: () => undefined },
    sandbox,
  };
}

async function open(
  servers: McpServerSpec[],
  cache = new ListingCache({ ttlMs: 60_000 }),
  taken: string[] = [],
) {
  return McpToolset.open(servers, { limits, cache, context: context(), taken });
}

const call = (tool: Tool | undefined, args: object) =>
  executeTool(tool as Tool, JSON.stringify(args), { callId: 'c1', signal: new AbortController().signal });
const byName = (set: McpToolset, name: string) => set.tools.find((tool) => tool.name === name);

describe('remote MCP servers (Streamable HTTP)', () => {
  it("offers server-everything's tools as <server>__<tool> with its descriptions and schemas, and calls them", async () => {
    const set = await open([{ name: 'everything', url: everything.url, headers: {} }]);
    try {
      const echo = byName(set, 'everything__echo');
      expect(echo).toMatchObject({
        server: 'everything',
        schema: { description: 'Echoes back the input string' },
      });
      expect(echo?.schema.parameters).toMatchObject({
        type: 'object',
        properties: { message: { type: 'string' } },
        required: ['message'],
      });
      expect(byName(set, 'everything__get-sum')).toBeDefined();
      expect(await call(echo, { message: 'hello' })).toEqual({ ok: true, content: 'Echo: hello' });
      expect(await call(byName(set, 'everything__get-sum'), { a: 2, b: 3 })).toMatchObject({
        ok: true,
        content: expect.stringContaining('5'),
      });
      // Checked against the server's schema before the server is asked.
      expect(await call(echo, { text: 'x' })).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    } finally {
      await set.close();
    }
  });

  it('offers only allowedTools, and never a name the run has already', async () => {
    const set = await open(
      [{ name: 'everything', url: everything.url, headers: {}, allowedTools: ['echo', 'get-sum'] }],
      undefined,
      ['everything__echo'],
    );
    try {
      const names = set.tools.map((tool) => tool.name);
      expect(names).toHaveLength(2);
      expect(names).toContain('everything__get-sum');
      const renamed = names.find((name) => name !== 'everything__get-sum') as string;
      expect(renamed).toMatch(/^everything__echo_[0-9a-f]{8}$/);
      expect(byName(set, renamed)?.schema.description).toMatch(/^\(everything's tool "echo"\) Echoes/);
      expect(await call(byName(set, renamed), { message: 'x' })).toEqual({ ok: true, content: 'Echo: x' });
    } finally {
      await set.close();
    }
  });

  it('lists from the cache while it is fresh, connecting only at the first call', async () => {
    const cache = new ListingCache({ ttlMs: 60_000 });
    const spec: McpServerSpec = { name: 'm', url: misbehaving.url, headers: { 'X-Key': 'k' } };
    await (await open([spec], cache)).close();
    const other = await startMisbehavingServer();
    const moved = { ...spec, url: other.url };
    await other.close();
    // Listed from the cache: the server being down does not stop the run's start ...
    const cachedKey = await open([{ ...spec }], cache);
    expect(cachedKey.tools.map((tool) => tool.name).sort()).toEqual([
      'm__echo',
      'm__flood',
      'm__hang',
      'm__whoami',
    ]);
    await cachedKey.close();
    // ... but another URL is another server, which is listed, and fails the start when it is down.
    await expect(open([moved], cache)).rejects.toMatchObject({
      code: 'ERR_MCP_SERVER_UNAVAILABLE',
      retryable: true,
      message: expect.stringMatching(/^The MCP server m could not be reached or listed: /),
    });
  });

  it('falls back to the legacy SSE transport for a server that has only that', async () => {
    const legacy = await startEverythingHttp('sse');
    try {
      const set = await open([{ name: 'old', url: legacy.url, headers: {} }]);
      try {
        expect(await call(byName(set, 'old__echo'), { message: 'over sse' })).toEqual({
          ok: true,
          content: 'Echo: over sse',
        });
      } finally {
        await set.close();
      }
    } finally {
      await legacy.stop();
    }
  });

  it('refuses a private address unless allowed, at connect time', async () => {
    const strict = { ...limits, policy: { allowHttp: true, allowPrivate: false } };
    await expect(
      McpToolset.open([{ name: 'e', url: everything.url, headers: {} }], {
        limits: strict,
        cache: new ListingCache({ ttlMs: 0 }),
        context: context(),
        taken: [],
      }),
    ).rejects.toMatchObject({
      code: 'ERR_MCP_SERVER_UNAVAILABLE',
      message: expect.stringMatching(/refused/),
    });
  });

  it('ends a call that hangs at the timeout, and one that answers too much at the cap, as tool errors', async () => {
    const set = await open([{ name: 'm', url: misbehaving.url, headers: {} }]);
    try {
      const started = Date.now();
      expect(await call(byName(set, 'm__hang'), {})).toMatchObject({
        ok: false,
        code: 'ERR_TOOL_MCP_TIMEOUT',
        content: expect.stringMatching(/did not answer m__hang within 1 s/),
      });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(await call(byName(set, 'm__flood'), { bytes: 1_000_000 })).toMatchObject({
        ok: false,
        code: 'ERR_TOOL_MCP_TOO_LARGE',
        content: expect.stringMatching(/more than 200000 bytes/),
      });
      expect(await call(byName(set, 'm__flood'), { bytes: 1_000 })).toMatchObject({ ok: true });
    } finally {
      await set.close();
    }
  });
});
