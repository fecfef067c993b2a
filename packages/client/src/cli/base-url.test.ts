import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_URL, readStackFile, resolveBaseUrl } from './base-url.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-base-url-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A pid that ran and has exited (a short-lived child's). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

function writeStack(at: string, body: unknown): string {
  mkdirSync(join(at, '.tether'), { recursive: true });
  const file = join(at, '.tether', 'stack.json');
  writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  return file;
}

describe('resolveBaseUrl', () => {
  it('takes --url, then TETHER_URL, then the stack file, then the default', () => {
    const file = writeStack(dir, { apiUrl: 'http://127.0.0.1:4100', pid: process.pid });
    const cwd = dir;
    expect(resolveBaseUrl({ flag: 'http://a:1', env: { TETHER_URL: 'http://b:2' }, cwd })).toEqual({
      url: 'http://a:1',
      source: '--url',
    });
    expect(resolveBaseUrl({ env: { TETHER_URL: 'http://b:2' }, cwd })).toEqual({
      url: 'http://b:2',
      source: 'TETHER_URL',
    });
    expect(resolveBaseUrl({ env: { TETHER_URL: ' ' }, cwd })).toEqual({
      url: 'http://127.0.0.1:4100',
      source: 'stack file',
      file,
    });
    rmSync(file);
    expect(resolveBaseUrl({ env: {}, cwd })).toEqual({ url: DEFAULT_URL, source: 'default' });
  });

  it('finds the nearest .tether/stack.json above the working directory', () => {
    const file = writeStack(dir, { apiUrl: 'http://127.0.0.1:4101', pid: process.pid });
    const deep = join(dir, 'a', 'b');
    mkdirSync(deep, { recursive: true });
    expect(resolveBaseUrl({ env: {}, cwd: deep })).toMatchObject({ url: 'http://127.0.0.1:4101', file });
    // A nearer one wins.
    writeStack(join(dir, 'a'), { apiUrl: 'http://127.0.0.1:4102', pid: process.pid });
    expect(resolveBaseUrl({ env: {}, cwd: deep }).url).toBe('http://127.0.0.1:4102');
  });

  it('reads TETHER_STACK_FILE, relative to the working directory, instead of searching', () => {
    writeStack(dir, { apiUrl: 'http://127.0.0.1:4103', pid: process.pid });
    const other = join(dir, 'elsewhere');
    writeStack(other, { apiUrl: 'http://127.0.0.1:4104', pid: process.pid });
    expect(resolveBaseUrl({ env: { TETHER_STACK_FILE: 'elsewhere/.tether/stack.json' }, cwd: dir }).url).toBe(
      'http://127.0.0.1:4104',
    );
    // A named file that is missing means the default, not a search.
    expect(resolveBaseUrl({ env: { TETHER_STACK_FILE: join(dir, 'none.json') }, cwd: other }).url).toBe(
      DEFAULT_URL,
    );
  });

  it('skips a stale file (its pnpm start no longer runs) and a malformed one', () => {
    writeStack(dir, { apiUrl: 'http://127.0.0.1:4105', pid: deadPid() });
    expect(resolveBaseUrl({ env: {}, cwd: dir })).toEqual({ url: DEFAULT_URL, source: 'default' });
    for (const body of ['{', '[]', { apiUrl: 'ftp://x', pid: process.pid }, { apiUrl: 'http://x' }]) {
      const file = writeStack(dir, body);
      expect(readStackFile(file), JSON.stringify(body)).toBeUndefined();
    }
  });
});
