/**
 * MCP servers through the worker's whole path, with a worker process and a
 * replay model calling their tools: server-everything over Streamable HTTP
 * (a per-run server, its sealed header opened and sent) and over stdio as an
 * operator's server in the run's sandbox (bubblewrap when it works here,
 * stopped when the attempt ends and when the run is cancelled); a tenant's
 * registered server, which another tenant's run cannot reach; a server that
 * hangs and one that answers too much, as tool errors the run goes on from.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SecretBox } from '@tether/config';
import {
  EVERYTHING_ENTRY,
  secretDigest,
  startEverythingHttp,
  startMisbehavingServer,
} from '@tether/mcp/testing';
import type { RunEvent } from '@tether/protocol';
import { McpServerStore } from '@tether/store/mcp-servers';
import { probeBwrap } from '@tether/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();
const key = SecretBox.newKey();
const box = new SecretBox(Buffer.from(key, 'base64'));
const sandbox = (await probeBwrap()).ok ? 'bwrap' : 'none';

let everything: Awaited<ReturnType<typeof startEverythingHttp>>;
let misbehaving: Awaited<ReturnType<typeof startMisbehavingServer>>;
beforeAll(async () => {
  [everything, misbehaving] = await Promise.all([startEverythingHttp(), startMisbehavingServer()]);
});
afterAll(async () => {
  await Promise.all([everything?.stop(), misbehaving?.close()]);
});

/** Processes of server-everything started over stdio (its launcher, bubblewrap, node). */
async function stdioServers(): Promise<number> {
  let count = 0;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(EVERYTHING_ENTRY) && cmdline.includes('stdio')) count++;
  }
  return count;
}

const results = (events: RunEvent[]) =>
  events
    .filter((event) => event.type === 'tool.result')
    .map((event) => event.data as Record<string, unknown>);

describe('MCP servers in runs', () => {
  it('calls remote, registered and stdio servers, keeps tenants apart and headers out of the log', async () => {
    const d = await deploy('mcp');
    const servers = join(d.workspaceRoot, 'mcp-servers.json');
    await writeFile(
      servers,
      JSON.stringify({
        local: { command: process.execPath, args: [EVERYTHING_ENTRY, 'stdio'], env: { SERVER_FLAG: 'on' } },
      }),
    );
    const worker = await d.startWorker({
      TETHER_SECRETS_KEY: key,
      TETHER_MCP_SERVERS: servers,
      TETHER_MCP_ALLOW_HTTP: '1',
      TETHER_MCP_ALLOW_PRIVATE: '1',
      TETHER_MCP_CALL_TIMEOUT_MS: '1000',
      // server-everything started over stdio in a sandbox takes seconds on a loaded machine.
      TETHER_MCP_CONNECT_TIMEOUT_MS: '30000',
      TETHER_MCP_MAX_RESPONSE_BYTES: '100000',
      TETHER_SANDBOX: sandbox,
      // Of the worker only: the stdio server must not see it.
      TETHER_PROBE_WORKER_ONLY: 'worker-only-value',
      // The harness's 2 s lock is lost on a loaded machine while server-everything starts over stdio.
      TETHER_LOCK_DURATION_MS: '10000',
      TETHER_STALLED_INTERVAL_MS: '5000',
    });

    // A per-run server with a sealed header, and server-everything: both called in one turn.
    const remote = await d.submit(
      [
        {
          toolCalls: [
            call('everything__echo', { message: 'hi' }),
            call('m__whoami', {}),
            call('m__flood', { bytes: 500_000 }),
            call('m__hang', {}),
          ],
        },
        { content: 'done' },
      ],
      {
        mcpServers: [
          { name: 'everything', url: everything.url },
          {
            name: 'm',
            url: misbehaving.url,
            sealedHeaders: box.seal(JSON.stringify({ 'X-Secret': 'per-run' })),
          },
        ],
      },
    );
    await d.waitForEvent(remote, 'run.completed', 30_000);
    const events = await d.store.readEvents(remote);
    const calls = events.filter((event) => event.type === 'tool.call').map((event) => event.data);
    expect(calls.map((data) => [data.name, data.server])).toEqual([
      ['everything__echo', 'everything'],
      ['m__whoami', 'm'],
      ['m__flood', 'm'],
      ['m__hang', 'm'],
    ]);
    expect(results(events)).toEqual([
      { callId: 'call_0_0', name: 'everything__echo', server: 'everything', ok: true, content: 'Echo: hi' },
      { callId: 'call_0_1', name: 'm__whoami', server: 'm', ok: true, content: secretDigest('per-run') },
      expect.objectContaining({
        name: 'm__flood',
        ok: false,
        content: expect.stringMatching(/more than 100000 bytes/),
      }),
      expect.objectContaining({
        name: 'm__hang',
        ok: false,
        content: expect.stringMatching(/did not answer m__hang within 1 s/),
      }),
    ]);
    expect(JSON.stringify(events)).not.toContain('per-run');

    // A server the tenant registered, by name; another tenant's run cannot reach it.
    const registry = new McpServerStore({ redis: d.redis, keys: d.keys, maxServers: 5 });
    await registry.save(TENANT, {
      name: 'private',
      url: misbehaving.url,
      sealedHeaders: box.seal(JSON.stringify({ 'X-Secret': 'registered' })),
      headerNames: ['X-Secret'],
    });
    const owner = await d.submit([{ toolCalls: [call('private__whoami', {})] }, { content: 'done' }], {
      mcpServers: [{ name: 'private' }],
    });
    await d.waitForEvent(owner, 'run.completed');
    expect(results(await d.store.readEvents(owner))[0]).toMatchObject({
      ok: true,
      content: secretDigest('registered'),
    });
    const { run: foreign } = await d.service.submit('tenant-b', {
      input: 'x',
      model: { provider: 'replay', script: [{ toolCalls: [call('private__whoami', {})] }, { content: 'x' }] },
      mcpServers: [{ name: 'private' }],
    });
    const failed = await d.waitForEvent(foreign.id, 'run.failed');
    expect(failed.data).toMatchObject({ error: { code: 'ERR_MCP_SERVER_UNKNOWN' } });

    // The operator's stdio server, in the run's sandbox: started at the run's start, gone at its end.
    const before = await stdioServers();
    const local = await d.submit(
      [
        { toolCalls: [call('local__echo', { message: 'boxed' }), call('local__get-env', {})] },
        { content: 'done' },
      ],
      { mcpServers: [{ name: 'local', allowedTools: ['echo', 'get-env'] }] },
    );
    await d.waitForEvent(local, 'run.completed', 30_000);
    const [echoed, env] = results(await d.store.readEvents(local));
    expect(echoed).toMatchObject({ server: 'local', ok: true, content: 'Echo: boxed' });
    // Its environment: the sandbox's allow-list, the workspace as HOME, its own variables; not the worker's.
    expect(env?.content).toContain('"SERVER_FLAG": "on"');
    expect(env?.content).toMatch(new RegExp(`"HOME": ".*${local}"`));
    expect(env?.content).not.toContain('worker-only-value');
    await until(async () => (await stdioServers()) === before, 'the stdio server to be stopped');

    // Cancelled while a call of it runs: the server and everything it started are gone.
    const cancelled = await d.submit(
      [
        { toolCalls: [call('local__trigger-long-running-operation', { duration: 30, steps: 3 })] },
        { content: 'x' },
      ],
      { mcpServers: [{ name: 'local' }] },
    );
    await d.waitForEvent(cancelled, (event) => event.type === 'tool.call', 30_000);
    await until(async () => (await stdioServers()) > before, 'the stdio server to start at the first call');
    await d.service.cancel(TENANT, cancelled);
    await d.waitForEvent(cancelled, 'run.cancelled');
    await until(
      async () => (await stdioServers()) === before,
      'the stdio server to be stopped at the cancel',
    );
    // No header value in the worker's log either.
    expect(worker.output()).not.toContain('per-run');
    expect(worker.output()).not.toContain('"registered"');
  });
});
