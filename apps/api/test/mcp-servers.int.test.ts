/**
 * MCP servers at the API, in process on the test Redis (a Redis Cluster in
 * the `cluster` project): `/v1/mcp-servers` (register, replace, read, list,
 * delete; headers sealed and never shown again; tenancy through every route;
 * the limits and bad input refused with a 4xx naming the problem), and a
 * run's `mcpServers` at submit (the SSRF rules, unknown and repeated names,
 * headers sealed in the stored spec and absent from what GET shows).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from '@tether/config';
import type { McpServer, McpServerList, SealedMcpServerRef } from '@tether/protocol';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACME, BETA, build, replayRun } from './helper.js';

const KEY = SecretBox.newKey();
const TOKEN = 'Bearer mcp-token-not-to-be-seen-0123';
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-api-mcp-'));
  const file = join(dir, 'servers.json');
  await writeFile(file, JSON.stringify({ local: { command: 'node', args: ['server.js'] } }));
  env = { TETHER_SECRETS_KEY: KEY, TETHER_MCP_SERVERS: file, TETHER_MCP_MAX_SERVERS: '2' };
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function register(app: FastifyInstance, body: object, headers: Record<string, string> = ACME) {
  return app.inject({ method: 'POST', url: '/v1/mcp-servers', headers, payload: body });
}

function submitRun(app: FastifyInstance, body: object, headers: Record<string, string> = ACME) {
  return app.inject({ method: 'POST', url: '/v1/runs', headers, payload: replayRun(undefined, body) });
}

describe('/v1/mcp-servers', () => {
  it('registers (201), replaces (200), reads, lists and deletes a server, never showing a header value', async () => {
    const { app } = await build({ env });
    const created = await register(app, {
      name: 'docs',
      url: 'https://docs.example.com/mcp',
      headers: { Authorization: TOKEN },
      allowedTools: ['search'],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.headers.location).toBe('/v1/mcp-servers/docs');
    expect(created.json<McpServer>()).toMatchObject({
      name: 'docs',
      url: 'https://docs.example.com/mcp',
      headerNames: ['Authorization'],
      allowedTools: ['search'],
    });
    const replaced = await register(app, { name: 'docs', url: 'https://docs.example.com/v2/mcp' });
    expect(replaced.statusCode).toBe(200);
    expect(replaced.json<McpServer>()).toMatchObject({
      url: 'https://docs.example.com/v2/mcp',
      headerNames: [],
    });
    expect(replaced.json<McpServer>().createdAt).toBe(created.json<McpServer>().createdAt);
    await register(app, { name: 'wiki', url: 'https://wiki.example.com/mcp', headers: { 'X-Key': 'k-123' } });

    const listed = await app.inject({ method: 'GET', url: '/v1/mcp-servers', headers: ACME });
    expect(listed.json<McpServerList>()).toMatchObject({ maxCount: 2, operatorServers: ['local'] });
    expect(listed.json<McpServerList>().data.map((s) => s.name)).toEqual(['docs', 'wiki']);
    const read = await app.inject({ method: 'GET', url: '/v1/mcp-servers/wiki', headers: ACME });
    expect(read.json<McpServer>().headerNames).toEqual(['X-Key']);
    for (const body of [created.body, listed.body, read.body]) {
      expect(body).not.toContain('mcp-token-not-to-be-seen');
      expect(body).not.toContain('k-123');
    }
    // At rest, sealed: Redis holds no header value in the clear.
    const stored = await app.redis.hgetall(app.keys.mcpServers('acme'));
    expect(JSON.stringify(stored)).not.toContain('k-123');
    expect(JSON.parse(stored.wiki ?? '{}').sealedHeaders).toMatch(/^v1\./);

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/mcp-servers/docs', headers: ACME });
    expect(deleted.statusCode).toBe(204);
    const gone = await app.inject({ method: 'GET', url: '/v1/mcp-servers/docs', headers: ACME });
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toMatchObject({ error: { code: 'ERR_MCP_SERVER_NOT_FOUND' } });
  });

  it("keeps tenants apart: another tenant's key reads, deletes and names none of them", async () => {
    const { app } = await build({ env });
    expect((await register(app, { name: 'private', url: 'https://p.example.com/mcp' })).statusCode).toBe(201);
    for (const method of ['GET', 'DELETE'] as const) {
      const answer = await app.inject({ method, url: '/v1/mcp-servers/private', headers: BETA });
      expect(answer.statusCode).toBe(404);
    }
    const list = await app.inject({ method: 'GET', url: '/v1/mcp-servers', headers: BETA });
    expect(list.json<McpServerList>().data).toEqual([]);
    const run = await submitRun(app, { mcpServers: [{ name: 'private' }] }, BETA);
    expect(run.statusCode).toBe(400);
    expect(run.json().error.message).toMatch(/no MCP server named private/);
    // The owner's runs name it, and it is still there.
    expect((await submitRun(app, { mcpServers: [{ name: 'private' }] })).statusCode).toBe(202);
    expect(
      (await app.inject({ method: 'GET', url: '/v1/mcp-servers/private', headers: ACME })).statusCode,
    ).toBe(200);
  });

  it('refuses bad input with a 4xx naming the problem, and the limits', async () => {
    const { app } = await build({ env });
    const cases: [object, number, string, RegExp][] = [
      [{ name: 'a__b', url: 'https://x.example.com' }, 400, 'ERR_VALIDATION', /name/],
      [{ name: 'x', url: 'http://x.example.com' }, 400, 'ERR_URL_REFUSED', /^url: .*https/],
      [{ name: 'x', url: 'https://127.0.0.1/mcp' }, 400, 'ERR_URL_REFUSED', /^url: /],
      [{ name: 'x', url: 'https://169.254.169.254/' }, 400, 'ERR_URL_REFUSED', /^url: /],
      [
        { name: 'x', url: 'https://x.example.com', headers: { 'Mcp-Session-Id': 's' } },
        400,
        'ERR_MCP_SERVERS_INVALID',
        /set by the MCP client/,
      ],
      [
        { name: 'x', url: 'https://x.example.com', headers: { 'Bad Name': 'v' } },
        400,
        'ERR_VALIDATION',
        /headers/,
      ],
      [{ name: 'local', url: 'https://x.example.com' }, 409, 'ERR_MCP_SERVER_NAME_TAKEN', /operator/],
    ];
    for (const [body, status, code, message] of cases) {
      const answer = await register(app, body);
      expect(answer.statusCode, answer.body).toBe(status);
      expect(answer.json().error.code).toBe(code);
      expect(answer.json().error.message).toMatch(message);
    }
    await register(app, { name: 'one', url: 'https://1.example.com' });
    await register(app, { name: 'two', url: 'https://2.example.com' });
    const full = await register(app, { name: 'three', url: 'https://3.example.com' });
    expect(full.statusCode).toBe(409);
    expect(full.json().error).toMatchObject({ code: 'ERR_MCP_SERVERS_LIMIT' });
    expect(full.json().error.message).toMatch(/TETHER_MCP_MAX_SERVERS 2/);
  });

  it('answers 503 ERR_SECRETS_KEY_MISSING for headers when there is no key, and takes a server without any', async () => {
    const { app } = await build();
    const withHeaders = await register(app, {
      name: 'x',
      url: 'https://x.example.com',
      headers: { 'X-Key': 'v' },
    });
    expect(withHeaders.statusCode).toBe(503);
    expect(withHeaders.json().error).toMatchObject({ code: 'ERR_SECRETS_KEY_MISSING' });
    expect(withHeaders.json().error.message).toMatch(/TETHER_SECRETS_KEY/);
    expect((await register(app, { name: 'x', url: 'https://x.example.com' })).statusCode).toBe(201);
    const run = await submitRun(app, {
      mcpServers: [{ name: 'y', url: 'https://y.example.com', headers: { A: 'b' } }],
    });
    expect(run.statusCode).toBe(503);
  });

  it('is in the OpenAPI document', async () => {
    const { app } = await build({ env });
    const openapi = (await app.inject({ method: 'GET', url: '/openapi.json' })).json<{
      paths: Record<string, Record<string, unknown>>;
    }>();
    expect(Object.keys(openapi.paths['/v1/mcp-servers'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(openapi.paths['/v1/mcp-servers/{name}'] ?? {}).sort()).toEqual(['delete', 'get']);
  });
});

describe('mcpServers at submit', () => {
  it('stores per-run headers sealed, shows them nowhere, and replays an idempotent submission', async () => {
    const { app, config } = await build({ env });
    const body = {
      mcpServers: [
        { name: 'remote', url: 'https://mcp.example.com/mcp', headers: { Authorization: TOKEN } },
        { name: 'local', allowedTools: ['echo'] },
      ],
    };
    const headers = { ...ACME, 'idempotency-key': 'mcp-run-1' };
    const first = await submitRun(app, body, headers);
    expect(first.statusCode, first.body).toBe(202);
    const id = first.json<{ id: string }>().id;
    const again = await submitRun(app, body, headers);
    expect(again.json<{ id: string }>().id).toBe(id);
    expect(again.headers['idempotent-replayed']).toBe('true');

    const spec = JSON.parse((await app.redis.get(app.keys.run(id).spec)) ?? '{}');
    expect(JSON.stringify(spec)).not.toContain('mcp-token-not-to-be-seen');
    const [remote, local] = spec.mcpServers as SealedMcpServerRef[];
    expect(remote).toMatchObject({ name: 'remote', url: 'https://mcp.example.com/mcp' });
    expect(JSON.parse(config.secrets?.open(remote?.sealedHeaders ?? '') ?? '{}')).toEqual({
      Authorization: TOKEN,
    });
    expect(local).toEqual({ name: 'local', allowedTools: ['echo'] });
    const view = await app.inject({ method: 'GET', url: `/v1/runs/${id}`, headers: ACME });
    expect(view.body).not.toContain('mcp-token-not-to-be-seen');
    const events = await app.inject({
      method: 'GET',
      url: `/v1/runs/${id}/events`,
      headers: { ...ACME, accept: 'application/json' },
    });
    expect(events.body).not.toContain('mcp-token-not-to-be-seen');
  });

  it('refuses the SSRF cases, a repeated or unknown name, headers without a url, and a client tool in a server’s names', async () => {
    const { app } = await build({ env });
    const tool = { name: 'remote__echo', description: 'x', parameters: { type: 'object' } };
    const cases: [object, string, RegExp][] = [
      [
        { mcpServers: [{ name: 'r', url: 'http://mcp.example.com' }] },
        'ERR_URL_REFUSED',
        /mcpServers\[0\] \(r\)\.url: /,
      ],
      [{ mcpServers: [{ name: 'r', url: 'https://10.0.0.8/mcp' }] }, 'ERR_URL_REFUSED', /mcpServers\[0\]/],
      [{ mcpServers: [{ name: 'r', url: 'https://[::1]/mcp' }] }, 'ERR_URL_REFUSED', /mcpServers\[0\]/],
      [
        { mcpServers: [{ name: 'r', url: 'https://user:pw@mcp.example.com' }] },
        'ERR_URL_REFUSED',
        /mcpServers\[0\]/,
      ],
      [
        { mcpServers: [{ name: 'r', url: 'https://169.254.169.254/latest' }] },
        'ERR_URL_REFUSED',
        /mcpServers\[0\]/,
      ],
      [
        { mcpServers: [{ name: 'local' }, { name: 'local' }] },
        'ERR_MCP_SERVERS_INVALID',
        /mcpServers\[1\] \(local\): the name local is given twice/,
      ],
      [{ mcpServers: [{ name: 'nowhere' }] }, 'ERR_MCP_SERVERS_INVALID', /no MCP server named nowhere/],
      [
        { mcpServers: [{ name: 'local', headers: { A: 'b' } }] },
        'ERR_MCP_SERVERS_INVALID',
        /headers go with a url/,
      ],
      [
        { mcpServers: [{ name: 'remote', url: 'https://m.example.com' }], tools: [tool] },
        'ERR_CLIENT_TOOLS_INVALID',
        /clash with the tools of MCP server remote/,
      ],
      [{ mcpServers: [{ name: 'bad__name' }] }, 'ERR_VALIDATION', /name/],
    ];
    for (const [body, code, message] of cases) {
      const answer = await submitRun(app, body);
      expect(answer.statusCode, JSON.stringify(body)).toBe(400);
      expect(answer.json().error.code, answer.body).toBe(code);
      expect(answer.json().error.message).toMatch(message);
    }
    const many = Array.from({ length: 9 }, (_, i) => ({ name: `s${i}`, url: 'https://m.example.com' }));
    expect((await submitRun(app, { mcpServers: many })).statusCode).toBe(400);
  });

  it('lets a run name a private address when the operator allows it (tests)', async () => {
    const { app } = await build({
      env: { ...env, TETHER_MCP_ALLOW_PRIVATE: '1', TETHER_MCP_ALLOW_HTTP: '1' },
    });
    const answer = await submitRun(app, { mcpServers: [{ name: 'r', url: 'http://127.0.0.1:9/mcp' }] });
    expect(answer.statusCode, answer.body).toBe(202);
  });
});
