import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';
import { countLines } from './write-file.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

const at = (...parts: string[]) => path.join(fx.workspace, ...parts);

describe('write_file', () => {
  it('writes from several callers at once into a folder none of them found (crew children share a workspace)', async () => {
    const tool = fx.tool('write_file');
    for (let round = 0; round < 40; round++) {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          invoke(tool, { path: `r${round}/deep/part-${i}.md`, content: `${round} ${i}` }),
        ),
      );
      for (const result of results) expect(result, JSON.stringify(result)).toMatchObject({ ok: true });
    }
    expect(await readdir(at('r39', 'deep'))).toHaveLength(8);
  });

  it('creates the file and its parents, reporting bytes and lines', async () => {
    const result = await invoke(fx.tool('write_file'), { path: 'a/b/c.txt', content: 'héllo\nworld\n' });
    expect(result).toEqual({ ok: true, content: 'Created "a/b/c.txt": wrote 13 bytes (2 lines).' });
    expect(await readFile(at('a', 'b', 'c.txt'), 'utf8')).toBe('héllo\nworld\n');
  });

  it('replaces an existing file by rename (a new inode), keeping its mode, leaving no temporary file', async () => {
    await writeFile(at('run.sh'), 'old\n');
    await chmod(at('run.sh'), 0o750);
    const before = await stat(at('run.sh'));
    const result = await invoke(fx.tool('write_file'), { path: 'run.sh', content: '#!/bin/sh\necho hi' });
    expect(result).toEqual({ ok: true, content: 'Overwrote "run.sh": wrote 17 bytes (2 lines).' });
    const after = await stat(at('run.sh'));
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o750);
    expect(await readFile(at('run.sh'), 'utf8')).toBe('#!/bin/sh\necho hi');
    expect(await readdir(fx.workspace)).toEqual(['run.sh']);
  });

  it('writes an empty file', async () => {
    expect(await invoke(fx.tool('write_file'), { path: 'empty', content: '' })).toEqual({
      ok: true,
      content: 'Created "empty": wrote 0 bytes (0 lines).',
    });
  });

  it('refuses a directory, a path under a file, a FIFO and content over the limit', async () => {
    await mkdir(at('dir'));
    await writeFile(at('file.txt'), 'x');
    execFileSync('mkfifo', [at('pipe')]);
    const tool = fx.tool('write_file', { limits: { writeFileMaxBytes: 10 } });
    expect(await invoke(tool, { path: 'dir', content: 'x' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_NOT_A_FILE',
    });
    expect(await invoke(tool, { path: 'file.txt/x', content: 'x' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_NOT_A_DIRECTORY',
    });
    expect(await invoke(tool, { path: 'pipe', content: 'x' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_NOT_A_FILE',
    });
    const large = await invoke(tool, { path: 'big.txt', content: 'x'.repeat(11) });
    expect(large).toMatchObject({ ok: false, code: 'ERR_TOOL_FILE_TOO_LARGE' });
    expect(large.content).toContain('at most 10');
    expect((await readdir(fx.workspace)).sort()).toEqual(['dir', 'file.txt', 'pipe']);
  });

  it('reports a file system refusal as ERR_TOOL_IO', async () => {
    // Tests run as root, which ignores permission bits: use a path of 4,096 bytes, which is
    // accepted as given but is longer than the system allows once joined to the workspace.
    const path = `${'abcdefg/'.repeat(511)}abcdefgh`;
    const result = await invoke(fx.tool('write_file'), { path, content: 'x' });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_IO' });
    expect(await readdir(fx.workspace)).toEqual([]);
  });

  it('refuses a name longer than the file system allows before touching it', async () => {
    const result = await invoke(fx.tool('write_file'), { path: `${'n'.repeat(300)}.txt`, content: 'x' });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_PATH_INVALID' });
    expect(result.content).toContain('longer than 255 bytes');
    expect(await readdir(fx.workspace)).toEqual([]);
  });

  it('requires path and content', async () => {
    expect(await invoke(fx.tool('write_file'), { path: 'a' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
      content: expect.stringContaining('missing required field `content`'),
    });
  });
});

describe('countLines', () => {
  it.each([
    ['', 0],
    ['a', 1],
    ['a\n', 1],
    ['a\nb', 2],
    ['a\n\n', 2],
    ['\n', 1],
  ])('%j has %i lines', (text, expected) => {
    expect(countLines(text)).toBe(expected);
  });
});
