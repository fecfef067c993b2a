import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EnvReader, readSharedConfig } from './config.js';
import { readMcpServersFile } from './mcp-servers.js';

const dir = mkdtempSync(join(tmpdir(), 'tether-mcp-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(content: string): string {
  const path = join(dir, `servers-${++files}.json`);
  writeFileSync(path, content);
  return path;
}

function read(content: string): { servers: ReturnType<typeof readMcpServersFile>; problems: string[] } {
  const problems: string[] = [];
  const servers = readMcpServersFile(file(content), (problem) => problems.push(problem));
  return { servers, problems };
}

describe('TETHER_MCP_SERVERS', () => {
  it('reads each server with its defaults', () => {
    const { servers, problems } = read(
      JSON.stringify({
        everything: { command: 'node', args: ['server.js', 'stdio'], env: { LEVEL: 'debug' } },
        'fs-tools_2': { command: '/usr/bin/fs-mcp' },
      }),
    );
    expect(problems).toEqual([]);
    expect(servers).toEqual({
      everything: { command: 'node', args: ['server.js', 'stdio'], env: { LEVEL: 'debug' } },
      'fs-tools_2': { command: '/usr/bin/fs-mcp', args: [], env: {} },
    });
  });

  it('names the file, the server and the field of every problem', () => {
    const { servers, problems } = read(
      JSON.stringify({
        a__b: { command: 'x' },
        nocmd: { args: [] },
        badargs: { command: 'x', args: 'y' },
        badenv: { command: 'x', env: { 'NOT-A-NAME': 'v' } },
        extra: { command: 'x', cwd: '/tmp' },
        ok: { command: 'x' },
      }),
    );
    expect(Object.keys(servers)).toEqual(['ok']);
    expect(problems).toHaveLength(5);
    expect(problems[0]).toMatch(
      /TETHER_MCP_SERVERS \(.+servers-\d+\.json\): server "a__b": a name is 1 to 32/,
    );
    expect(problems[1]).toMatch(/server "nocmd": "command" must be a non-empty string/);
    expect(problems[2]).toMatch(/server "badargs": "args" must be an array of strings/);
    expect(problems[3]).toMatch(/server "badenv": "env" entry "NOT-A-NAME"/);
    expect(problems[4]).toMatch(/server "extra": unknown field "cwd"/);
  });

  it('refuses a command the sandbox would not find: a relative path, or a program under /tmp or /run', () => {
    // The sandbox gives every command a private /tmp and /run: a host file there is not seen.
    const hostTmp = mkdtempSync('/tmp/tether-mcp-host-');
    const script = join(hostTmp, 'server.js');
    writeFileSync(script, '');
    try {
      const { servers, problems } = read(
        JSON.stringify({
          relative: { command: './bin/server' },
          intmp: { command: '/tmp/servers/fs-mcp' },
          inrun: { command: '/run/mcp/server' },
          scriptintmp: { command: 'node', args: [script, 'stdio'] },
          // Paths of the sandbox's own private /tmp (nothing there on this host) are the server's business.
          cache: { command: 'node', args: ['server.js', '/tmp/cache-dir', '--log=/tmp/x'] },
        }),
      );
      expect(Object.keys(servers)).toEqual(['cache']);
      expect(problems).toHaveLength(4);
      expect(problems[0]).toMatch(/server "relative": "command" "\.\/bin\/server" is a relative path/);
      expect(problems[1]).toMatch(
        /server "intmp": "command" "\/tmp\/servers\/fs-mcp" is under \/tmp or \/run/,
      );
      expect(problems[2]).toMatch(/server "inrun": "command" "\/run\/mcp\/server" is under \/tmp or \/run/);
      expect(problems[3]).toContain(`server "scriptintmp": "args" names ${JSON.stringify(script)}`);
    } finally {
      rmSync(hostTmp, { recursive: true, force: true });
    }
  });

  it('refuses a file that is missing, not JSON, or not an object', () => {
    const problems: string[] = [];
    readMcpServersFile(join(dir, 'missing.json'), (problem) => problems.push(problem));
    expect(problems[0]).toMatch(/could not be read as JSON: ENOENT/);
    expect(read('{ nope').problems[0]).toMatch(/could not be read as JSON/);
    expect(read('[]').problems[0]).toMatch(/must hold a JSON object of servers by name/);
  });

  it('is part of the shared settings, with the other MCP variables, and fails the start when wrong', () => {
    const path = file(JSON.stringify({ everything: { command: 'node' } }));
    const reader = new EnvReader({
      TETHER_MCP_SERVERS: path,
      TETHER_MCP_ALLOW_HTTP: '1',
      TETHER_MCP_MAX_SERVERS: '5',
    });
    const config = readSharedConfig(reader);
    expect(reader.problems).toEqual([]);
    expect(config).toMatchObject({
      mcpAllowHttp: true,
      mcpAllowPrivate: false,
      mcpMaxServers: 5,
      mcpServers: { everything: { command: 'node', args: [], env: {} } },
    });
    expect(readSharedConfig(new EnvReader({})).mcpServers).toEqual({});
    const bad = new EnvReader({ TETHER_MCP_SERVERS: join(dir, 'none.json') });
    readSharedConfig(bad);
    expect(() => bad.done()).toThrow(/TETHER_MCP_SERVERS .* could not be read/);
  });
});
