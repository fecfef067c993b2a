import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChainableCommander } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { LuaScript, loadLua, parseHeader } from './lua-script.js';

const root = mkdtempSync(join(tmpdir(), 'tether-lua-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A commands folder holding `files` (name without .lua → content). */
function commands(files: Record<string, string>): URL {
  const dir = mkdtempSync(join(root, 'commands-'));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, `${name}.lua`), content);
  }
  return pathToFileURL(`${dir}/`);
}

const header = (lines: string) => `--[[\n  A test script.\n\n  Input:\n${lines}\n  Output:\n    1\n]]\n`;
const none = { keys: [], args: [] };

describe('loadLua', () => {
  it('drops the header and the last newline, and inlines each include once, where it is first included', () => {
    const dir = commands({
      'includes/a': '--[[\n  a\n]]\nlocal function a() return 1 end\n',
      'includes/b': '--[[\n  b needs a\n]]\n--- @include "includes/a"\nlocal function b() return a() end\n',
      main: `${header('')}\n--- @include "includes/b"\n--- @include "includes/a"\n\nreturn b()\n`,
    });
    expect(loadLua(dir, 'main', none)).toBe(
      '\nlocal function a() return 1 end\nlocal function b() return a() end\n\n\nreturn b()',
    );
  });

  it('looks in each folder in order: its own first, then the shared includes', () => {
    const own = commands({
      'includes/a': '--[[\n  own a\n]]\nlocal function a() return 1 end\n',
      main: `${header('')}--- @include "includes/a"\n--- @include "includes/shared"\nreturn a() + shared()\n`,
    });
    const shared = commands({
      'includes/a': '--[[\n  not this one\n]]\nlocal function a() return 2 end\n',
      'includes/shared': '--[[\n  shared\n]]\nlocal function shared() return 3 end\n',
    });
    expect(loadLua([own, shared], 'main', none)).toBe(
      'local function a() return 1 end\nlocal function shared() return 3 end\nreturn a() + shared()',
    );
    expect(() => loadLua([own, shared], 'absent', none)).toThrow(
      `absent.lua not found in ${own.pathname} or ${shared.pathname}`,
    );
  });

  it('refuses an include cycle and a missing include, naming the files', () => {
    const dir = commands({
      'includes/a': '--- @include "includes/b"\n',
      'includes/b': '--- @include "includes/a"\n',
      cycle: `${header('')}--- @include "includes/a"\n`,
      missing: `${header('')}--- @include "includes/gone"\n`,
    });
    expect(() => loadLua(dir, 'cycle', none)).toThrow(
      'Lua include cycle: cycle.lua -> includes/a.lua -> includes/b.lua -> includes/a.lua',
    );
    expect(() => loadLua(dir, 'missing', none)).toThrow('includes/gone.lua not found');
    expect(() => loadLua(dir, 'absent', none)).toThrow('absent.lua not found');
  });

  it('refuses a wrapper whose keys or arguments are not those the header lists, in its order', () => {
    const dir = commands({
      s: `${header('    KEYS[1] record  the record\n    KEYS[2] events\n\n    ARGV[1] token\n    ARGV[2] status\n    ARGV[3...] events')}return 1\n`,
    });
    const good = { keys: ['record', 'events'], args: ['token', 'status'], rest: 'events' };
    expect(loadLua(dir, 's', good)).toBe('return 1');
    expect(() => loadLua(dir, 's', { ...good, args: ['status', 'token'] })).toThrow(
      's.lua: its header lists args (token, status), its wrapper (status, token)',
    );
    expect(() => loadLua(dir, 's', { ...good, keys: ['record'] })).toThrow(
      's.lua: its header lists keys (record, events), its wrapper (record)',
    );
    expect(() => loadLua(dir, 's', { ...good, rest: undefined })).toThrow(
      's.lua: its header lists rest events, its wrapper none',
    );
  });

  it('refuses a header that is missing, has no Output, skips an index, or lists anything after the rest', () => {
    expect(() => parseHeader('s', 'return 1\n')).toThrow('s.lua: no header');
    expect(() => parseHeader('s', '--[[\n  KEYS[1] record\n]]\nreturn 1\n')).toThrow(
      's.lua: its header has no Output:',
    );
    expect(() => parseHeader('s', header('    KEYS[1] record\n    KEYS[3] events'))).toThrow(
      's.lua: "KEYS[3] events" should be KEYS[2]',
    );
    expect(() => parseHeader('s', header('    ARGV[1...] events\n    ARGV[2] token'))).toThrow(
      's.lua: "ARGV[2] token": only the last ARGV can be a rest (ARGV[n...])',
    );
    expect(() => parseHeader('s', header('    KEYS[1...] records'))).toThrow(
      'only the last ARGV can be a rest',
    );
    expect(parseHeader('s', header('    KEYS[1] record\n\n    ARGV[1] token  a description'))).toEqual({
      keys: ['record'],
      args: ['token'],
      rest: undefined,
    });
  });
});

describe('LuaScript', () => {
  it('sends the keys, then the arguments in its signature order, then the rest, whatever the order of the call', () => {
    const script = new LuaScript('s', 'return 1', {
      keys: ['record', 'events'],
      args: ['channel', 'maxlen'],
      rest: 'events',
    });
    const sent: unknown[][] = [];
    const pipeline = { evalsha: (...argv: unknown[]) => sent.push(argv) } as unknown as ChainableCommander;
    script.queue(pipeline, {
      keys: { events: 'k:events', record: 'k:record' },
      args: { events: ['t', '{}', 'u', '[]'], maxlen: 10, channel: 'c' },
    });
    expect(sent).toEqual([[script.sha, 2, 'k:record', 'k:events', 'c', 10, 't', '{}', 'u', '[]']]);
  });
});
