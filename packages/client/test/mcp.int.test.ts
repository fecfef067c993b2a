/**
 * client.mcpServers, `tether mcp add|ls|rm` and `tether run --mcp` against a
 * real API process and worker on the test Redis, with server-everything over
 * Streamable HTTP as the MCP server.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SecretBox } from '@tether/config';
import { startEverythingHttp } from '@tether/mcp/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TetherApiError, TetherClient, TetherNotFoundError } from '../src/index.js';
import { API_KEY, type Stack, startStack } from './stack.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const run = promisify(execFile);

let stack: Stack;
let client: TetherClient;
let everything: Awaited<ReturnType<typeof startEverythingHttp>>;
beforeAll(async () => {
  [stack, everything] = await Promise.all([
    startStack('client-mcp', {
      TETHER_SECRETS_KEY: SecretBox.newKey(),
      TETHER_MCP_ALLOW_HTTP: '1',
      TETHER_MCP_ALLOW_PRIVATE: '1',
    }),
    startEverythingHttp(),
  ]);
  client = new TetherClient({ baseUrl: stack.baseUrl, apiKey: API_KEY });
}, 30_000);
afterAll(async () => {
  await Promise.all([stack?.stop(), everything?.stop()]);
});

async function tether(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      env: { ...process.env, TETHER_URL: stack.baseUrl, TETHER_API_KEY: API_KEY, NO_COLOR: '1' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('MCP servers from the SDK and the CLI', () => {
  it('registers, lists, reads and deletes a server; a refused URL and a missing server are typed errors', async () => {
    const server = await client.mcpServers.register({
      name: 'sdk',
      url: everything.url,
      headers: { Authorization: 'Bearer sdk-secret' },
    });
    expect(server).toMatchObject({ name: 'sdk', url: everything.url, headerNames: ['Authorization'] });
    expect(JSON.stringify(await client.mcpServers.get('sdk'))).not.toContain('sdk-secret');
    expect((await client.mcpServers.list()).data.map((s) => s.name)).toContain('sdk');
    const refused = await client.mcpServers
      .register({ name: 'meta', url: 'http://169.254.169.254/' })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(TetherApiError);
    expect(refused).toMatchObject({ code: 'ERR_URL_REFUSED', status: 400 });
    await client.mcpServers.delete('sdk');
    await expect(client.mcpServers.get('sdk')).rejects.toBeInstanceOf(TetherNotFoundError);
  });

  it('tether mcp add, ls and rm; tether run --mcp runs with its tools', async () => {
    const added = await tether(
      'mcp',
      'add',
      'everything',
      everything.url,
      '--header',
      'X-Key: cli-secret',
      '--allow',
      'echo',
    );
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toContain('Registered MCP server everything at');
    expect(added.stdout).toContain('headers X-Key (stored sealed)');
    const listed = await tether('mcp', 'ls');
    expect(listed.stdout).toMatch(/everything\s+\S+.*\(headers: X-Key; tools: echo\)/);
    expect(listed.stdout).not.toContain('cli-secret');

    // A run naming it by name, its model a replay script calling the tool.
    const script = JSON.stringify([
      { toolCalls: [{ name: 'everything__echo', arguments: { message: 'from the cli' } }] },
      { content: 'echoed' },
    ]);
    const file = `${stack.workspaceRoot}/replay.json`;
    await writeFile(file, script);
    const ran = await tether('run', 'echo something', '--replay', file, '--mcp', 'everything', '--json');
    expect(ran.code, ran.stderr).toBe(0);
    const events = ran.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> });
    expect(events.find((event) => event.type === 'tool.result')?.data).toMatchObject({
      name: 'everything__echo',
      server: 'everything',
      ok: true,
      content: 'Echo: from the cli',
    });
    expect(events.at(-1)?.type).toBe('run.completed');

    const removed = await tether('mcp', 'rm', 'everything');
    expect(removed.stdout).toBe('Deleted MCP server everything.\n');
    expect((await tether('mcp', 'rm', 'everything')).code).not.toBe(0);
  });
});
