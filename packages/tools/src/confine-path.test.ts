import { describe, expect, it } from 'vitest';
import { confinePath, MAX_NAME_BYTES, MAX_PATH_BYTES, relativeInside } from './confine-path.js';

describe('relativeInside', () => {
  it.each([
    ['/a/ws', '/a/ws', ''],
    ['/a/ws', '/a/ws/x/y', 'x/y'],
    ['/a/ws', '/a/ws-sibling/x', undefined],
    ['/a/ws', '/a', undefined],
    ['/a/ws', '/a/ws/..foo', '..foo'],
  ])('%s contains %s -> %s', (parent, child, expected) => {
    expect(relativeInside(parent, child)).toBe(expected);
  });
});

const ROOT = '/srv/ws/run_1';

describe('confinePath', () => {
  describe('relative paths, as the file tools take them', () => {
    it.each([
      ['a.txt', 'a.txt'],
      ['./a.txt', 'a.txt'],
      ['src/index.ts', 'src/index.ts'],
      ['a//b///c', 'a/b/c'],
      ['a/./b/.', 'a/b'],
      ['a/../b.txt', 'b.txt'],
      ['dir/', 'dir'],
      ['.', ''],
      ['a/..', ''],
      ['..foo', '..foo'],
      ['a\\..\\..\\x', 'a\\..\\..\\x'],
      ['データ/ファイル.txt', 'データ/ファイル.txt'],
      ['e\u0301t\u00e9 ☃/🙂', 'e\u0301t\u00e9 ☃/🙂'],
    ])('%j is %j inside', (input, relative) => {
      expect(confinePath(input, { roots: [ROOT] })).toEqual({ ok: true, relative });
    });

    it.each(['..', '../x', 'a/../../x', './../x', 'a/b/../../..', '../ws/run_1/x', '../run_1'])(
      '%j leads outside',
      (input) => {
        expect(confinePath(input, { roots: [ROOT] })).toEqual({
          ok: false,
          refusal: 'outside',
          problem: 'leads outside the workspace',
        });
      },
    );
  });

  describe('absolute paths', () => {
    it.each([
      [ROOT, ''],
      [`${ROOT}/`, ''],
      [`${ROOT}/a/b.txt`, 'a/b.txt'],
      [`${ROOT}//a/./b/../c`, 'a/c'],
      ['/real/ws/x', 'x'],
    ])('%j is %j inside one of the roots', (input, relative) => {
      expect(confinePath(input, { roots: [ROOT, '/real/ws'] })).toEqual({ ok: true, relative });
    });

    it.each(['/etc/passwd', '/srv/ws/run_1-sibling/x', '/srv/ws', `${ROOT}/../run_2/x`, `${ROOT}/a/../../x`])(
      '%j is outside (containment is path.relative, not a prefix)',
      (input) => {
        expect(confinePath(input, { roots: [ROOT] })).toMatchObject({ ok: false, refusal: 'outside' });
      },
    );

    it('are refused as absolute without roots, even one that would be inside', () => {
      for (const input of ['/etc/passwd', `${ROOT}/a.txt`, '/']) {
        expect(confinePath(input)).toEqual({
          ok: false,
          refusal: 'absolute',
          problem: 'is absolute; give a path relative to the workspace',
        });
      }
    });
  });

  describe('backslashes', () => {
    it('are a character of a name unless the path is portable', () => {
      expect(confinePath('..\\x')).toEqual({ ok: true, relative: '..\\x' });
      expect(confinePath('C:\\x')).toEqual({ ok: true, relative: 'C:\\x' });
    });

    it.each([
      ['..\\x', 'outside'],
      ['a\\..\\..\\x', 'outside'],
      ['C:\\x', 'absolute'],
      ['C:/x', 'absolute'],
      ['\\\\host\\share\\x', 'absolute'],
      ['\\x', 'absolute'],
    ])('separate names in a portable path: %j is %s', (input, refusal) => {
      expect(confinePath(input, { portable: true })).toMatchObject({ ok: false, refusal });
    });

    it('normalise to slashes in a portable path', () => {
      expect(confinePath('src\\lib\\a.ts', { portable: true })).toEqual({
        ok: true,
        relative: 'src/lib/a.ts',
      });
    });
  });

  it('refuses an empty path and a NUL byte anywhere, before anything else', () => {
    expect(confinePath('', { roots: [ROOT] })).toEqual({ ok: false, refusal: 'empty', problem: 'is empty' });
    for (const input of ['a\0b', '\0', 'inside.txt\u0000../../outside', `${ROOT}/a\0`]) {
      expect(confinePath(input, { roots: [ROOT] })).toEqual({
        ok: false,
        refusal: 'nul',
        problem: 'contains a NUL byte',
      });
    }
  });

  describe('over-long paths', () => {
    it.each([
      [
        'a name of 256 bytes',
        'a'.repeat(MAX_NAME_BYTES + 1),
        'has a name of 256 bytes, longer than 255 bytes',
      ],
      ['a name of 128 two-byte characters', `d/${'é'.repeat(128)}/x`, 'has a name of 256 bytes'],
      ['a name of 64 four-byte characters', '🙂'.repeat(64), 'has a name of 256 bytes'],
      ['a path of 4,097 bytes', `${'a/'.repeat(2_048)}b`, 'is 4097 bytes long, longer than 4096 bytes'],
      ['an outside path that is also too long', `../${'a'.repeat(300)}`, 'has a name of 300 bytes'],
    ])('refuses %s', (_, input, problem) => {
      const confined = confinePath(input, { roots: [ROOT] });
      expect(confined).toMatchObject({ ok: false, refusal: 'too-long' });
      expect(!confined.ok && confined.problem).toContain(problem);
    });

    it('accepts a name of 255 bytes and a path of 4,096 bytes', () => {
      expect(confinePath('a'.repeat(MAX_NAME_BYTES))).toMatchObject({ ok: true });
      expect(confinePath(`d/${'é'.repeat(127)}`)).toMatchObject({ ok: true });
      expect(confinePath(`${'a/'.repeat(MAX_PATH_BYTES / 2 - 1)}bb`)).toMatchObject({ ok: true });
    });
  });

  describe('file paths', () => {
    it.each(['.', './', 'dir/', 'a/..', 'a/../', `${ROOT}/`])('%j names a directory', (input) => {
      expect(confinePath(input, { roots: [ROOT], file: true })).toEqual({
        ok: false,
        refusal: 'directory',
        problem: 'names a directory, not a file',
      });
    });

    it('accepts a path that ends in a name, `.` collapsed', () => {
      expect(confinePath('dir/.', { file: true })).toEqual({ ok: true, relative: 'dir' });
      expect(confinePath('.hidden', { file: true })).toEqual({ ok: true, relative: '.hidden' });
    });

    it('treats a trailing backslash of a portable path as a directory', () => {
      expect(confinePath('dir\\', { portable: true, file: true })).toMatchObject({ refusal: 'directory' });
    });
  });
});
