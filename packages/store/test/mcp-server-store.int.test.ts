import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { McpServerStore, mcpServerView } from '../src/mcp-servers/index.js';
import { createKeys, createRedisConnection } from '../src/redis/index.js';

/**
 * A tenant's registered MCP servers against the real script: created,
 * replaced with its creation time kept, the tenant's limit checked in the
 * step, tenants apart, and the view that never shows a header's value.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'mcp-servers', onError: () => {} });
afterAll(() => redis.quit());
const keys = createKeys(uniquePrefix('mcp'));
const store = new McpServerStore({ redis, keys, maxServers: 2 });

let tenants = 0;
const tenant = () => `t${++tenants}-${Date.now().toString(36)}`;

const server = (name: string, extra: Partial<Parameters<McpServerStore['save']>[1]> = {}) => ({
  name,
  url: `https://${name}.example.com/mcp`,
  headerNames: [],
  ...extra,
});

describe('MCP server store', () => {
  it("keeps a tenant's servers under the tenant's hash tag", () => {
    expect(keys.mcpServers('acme')).toBe(`${keys.namespace}:tenant:{acme}:mcp-servers`);
  });

  it('registers, replaces (keeping the creation time), reads and deletes a server', async () => {
    const t = tenant();
    const first = await store.save(
      t,
      server('docs', { sealedHeaders: 'v1.x', headerNames: ['Authorization'] }),
    );
    expect(first).toMatchObject({ created: true, server: { name: 'docs', sealedHeaders: 'v1.x' } });
    if (!('server' in first)) throw new Error('not saved');
    const again = await store.save(
      t,
      server('docs', { url: 'https://other.example.com/mcp', allowedTools: [] }),
    );
    if (!('server' in again)) throw new Error('not saved');
    expect(again.created).toBe(false);
    expect(again.server).toMatchObject({
      url: 'https://other.example.com/mcp',
      headerNames: [],
      allowedTools: [],
    });
    expect(again.server.sealedHeaders).toBeUndefined();
    expect(again.server.createdAt).toBe(first.server.createdAt);
    expect(again.server.updatedAt).toBeGreaterThanOrEqual(first.server.updatedAt);
    expect(await store.get(t, 'docs')).toEqual(again.server);
    expect(await store.delete(t, 'docs')).toBe(true);
    expect(await store.delete(t, 'docs')).toBe(false);
    expect(await store.get(t, 'docs')).toBeUndefined();
  });

  it("refuses a server past the tenant's limit, but not a replacement, and keeps tenants apart", async () => {
    const t = tenant();
    const other = tenant();
    await store.save(t, server('a'));
    await store.save(t, server('b'));
    expect(await store.save(t, server('c'))).toEqual({ full: 2 });
    expect(await store.save(t, server('b', { allowedTools: ['echo'] }))).toMatchObject({ created: false });
    expect((await store.list(t)).map((s) => s.name)).toEqual(['a', 'b']);
    expect(await store.list(other)).toEqual([]);
    expect(await store.get(other, 'a')).toBeUndefined();
    expect(await store.save(other, server('c'))).toMatchObject({ created: true });
  });

  it('stores a tool name with a lone surrogate (as U+FFFD: Redis cjson refuses the escape)', async () => {
    const t = tenant();
    const saved = await store.save(t, server('odd', { allowedTools: ['a\uD800b'] }));
    expect(saved).toMatchObject({ created: true, server: { allowedTools: ['a\uFFFDb'] } });
  });

  it('shows the names of the headers, never their sealed values', async () => {
    const t = tenant();
    const saved = await store.save(
      t,
      server('x', { sealedHeaders: 'v1.secret', headerNames: ['X-Api-Key'] }),
    );
    if (!('server' in saved)) throw new Error('not saved');
    const view = mcpServerView(saved.server);
    expect(view).toEqual({
      name: 'x',
      url: 'https://x.example.com/mcp',
      headerNames: ['X-Api-Key'],
      createdAt: new Date(saved.server.createdAt).toISOString(),
      updatedAt: new Date(saved.server.updatedAt).toISOString(),
    });
    expect(JSON.stringify(view)).not.toContain('v1.secret');
  });
});
