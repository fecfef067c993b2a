/**
 * `client.memory` and `tether memory ls|add|rm` against the fake API on a
 * real port: the requests they send, what they print, usage errors.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TetherClient } from '../client.js';
import { TetherConflictError, TetherNotFoundError } from '../errors.js';
import { FakeApi } from '../testing/fake-api.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import type { CliIo } from './io.js';
import { runCli } from './program.js';

let api: FakeApi;

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  api.keys.set('key-b', 'tenant-b');
  await api.start();
});

afterEach(async () => {
  await api.close();
});

function terminal(key = 'key-a') {
  const stdout = new RecordingOutput(false);
  const stderr = new RecordingOutput(false);
  const io: CliIo = {
    stdout,
    stderr,
    stdin: new KeyboardInput(false),
    env: { TETHER_URL: api.baseUrl, TETHER_API_KEY: key, NO_COLOR: '1' },
  };
  return { io, stdout, stderr };
}

async function cli(args: string[], key?: string) {
  const { io, stdout, stderr } = terminal(key);
  const code = await runCli(args, io);
  return { code, out: stdout.plain, err: stderr.plain };
}

describe('client.memory', () => {
  it('adds, lists (with a query and a page), deletes and clears, on the routes of the contract', async () => {
    const client = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a' });
    const first = await client.memory.add('user-42', { content: 'The user prefers pnpm.', tags: ['tools'] });
    expect(first).toMatchObject({ content: 'The user prefers pnpm.', tags: ['tools'] });
    await client.memory.add('user-42', { content: 'Releases on Fridays.' });
    const page = await client.memory.list('user-42', { query: 'pnpm', limit: 5 });
    expect(page.data.map((entry) => entry.id)).toEqual([first.id]);
    const last = api.requests.at(-1);
    expect(last?.path).toBe('/v1/memory/user-42');
    expect(Object.fromEntries(last?.query ?? [])).toEqual({ q: 'pnpm', limit: '5' });
    await client.memory.delete('user-42', first.id);
    expect(api.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1/memory/user-42/${first.id}` });
    await expect(client.memory.delete('user-42', first.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await expect(client.memory.add('user-42', { content: 'Releases on Fridays.' })).rejects.toBeInstanceOf(
      TetherConflictError,
    );
    expect(await client.memory.clear('user-42')).toEqual({ deleted: 1 });
    await expect(client.memory.list('')).rejects.toThrow(/memory scope must be a non-empty string/);
  });
});

describe('tether memory', () => {
  it('add prints the new id; ls shows entries newest first with tags, and where the next page is', async () => {
    const a = await cli([
      'memory',
      'add',
      'user-42',
      'The user prefers pnpm.',
      '--tag',
      'tools',
      '-t',
      'prefs',
    ]);
    expect(a.code).toBe(0);
    expect(a.out).toMatch(/^mem_\d{26}\n$/);
    expect(api.requests.at(-1)?.body).toEqual({
      content: 'The user prefers pnpm.',
      tags: ['tools', 'prefs'],
    });
    await cli(['memory', 'add', 'user-42', 'Releases on Fridays.\nNever on Mondays.']);
    const listed = await cli(['memory', 'ls', 'user-42', '--limit', '1']);
    expect(listed.code).toBe(0);
    expect(listed.out).toContain('  Releases on Fridays. (+1 lines)\n');
    expect(listed.out).toContain('1 of 2 entries in user-42; more: tether memory ls user-42 --cursor 1');
    const second = await cli(['memory', 'ls', 'user-42', '--cursor', '1']);
    expect(second.out).toContain('[tools, prefs]\n  The user prefers pnpm.\n');
    const json = await cli(['memory', 'ls', 'user-42', '--query', 'pnpm', '--json']);
    expect(JSON.parse(json.out)).toMatchObject({
      scope: 'user-42',
      total: 2,
      data: [{ tags: ['tools', 'prefs'] }],
    });
  });

  it('ls lists the default scope without a scope, and says when a scope is empty or nothing matches', async () => {
    expect((await cli(['memory', 'ls'])).out).toBe('Scope default holds no memory.\n');
    expect(api.requests.at(-1)?.path).toBe('/v1/memory/default');
    await cli(['memory', 'add', 'default', 'a fact']);
    expect((await cli(['memory', 'ls', '--query', 'zebra'])).out).toBe('Nothing in scope default matches.\n');
    // Another tenant's key sees its own scope of that name.
    expect((await cli(['memory', 'ls'], 'key-b')).out).toBe('Scope default holds no memory.\n');
  });

  it('rm deletes an entry, or every entry with --all, and refuses both or neither', async () => {
    const id = (await cli(['memory', 'add', 's', 'one'])).out.trim();
    await cli(['memory', 'add', 's', 'two']);
    await cli(['memory', 'add', 's', 'three']);
    expect((await cli(['memory', 'rm', 's', id])).out).toBe(`Deleted ${id} from s.\n`);
    const gone = await cli(['memory', 'rm', 's', id]);
    expect(gone.code).toBe(1);
    expect(gone.err).toContain(`No memory entry ${id} in scope s. (ERR_MEMORY_NOT_FOUND, HTTP 404)`);
    expect((await cli(['memory', 'rm', 's', '--all'])).out).toBe('Deleted 2 entries from s.\n');
    for (const args of [
      ['memory', 'rm', 's'],
      ['memory', 'rm', 's', id, '--all'],
    ]) {
      const refused = await cli(args);
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('give either an entry id or --all');
    }
  });

  it('reports a refused add with its code, and exits 1', async () => {
    await cli(['memory', 'add', 's', 'same']);
    const duplicate = await cli(['memory', 'add', 's', 'same']);
    expect(duplicate.code).toBe(1);
    expect(duplicate.err).toContain('(ERR_MEMORY_DUPLICATE, HTTP 409)');
  });
});
