import { describe, expect, it } from 'vitest';
import { ancestorsOf, baseName, folderView, formatBytes, kindOf, textOf } from './workspace.js';

const FILES = [
  { path: 'README.md', size: 10 },
  { path: 'docs/a.md', size: 3 },
  { path: 'docs/deep/b.md', size: 4 },
  { path: 'docs/deep/c.bin', size: 5 },
  { path: 'docs2/z.txt', size: 1 },
  { path: 'a.txt', size: 2 },
];

describe('the workspace from its flat listing', () => {
  it('tells files, folders and missing paths apart (a prefix of a name is no folder)', () => {
    expect(kindOf(FILES, '')).toEqual({ kind: 'folder' });
    expect(kindOf(FILES, 'docs')).toEqual({ kind: 'folder' });
    expect(kindOf(FILES, 'docs/deep')).toEqual({ kind: 'folder' });
    expect(kindOf(FILES, 'docs/a.md')).toEqual({ kind: 'file', file: { path: 'docs/a.md', size: 3 } });
    expect(kindOf(FILES, 'doc')).toEqual({ kind: 'missing' });
    expect(kindOf(FILES, 'docs/a')).toEqual({ kind: 'missing' });
    expect(kindOf(FILES, '../etc/passwd')).toEqual({ kind: 'missing' });
    expect(kindOf([], '')).toEqual({ kind: 'folder' });
  });

  it("lists a folder's folders (with their files and sizes at any depth), then its files, by name", () => {
    expect(folderView(FILES, '')).toEqual({
      folders: [
        { name: 'docs', path: 'docs', files: 3, size: 12 },
        { name: 'docs2', path: 'docs2', files: 1, size: 1 },
      ],
      files: [
        { name: 'README.md', path: 'README.md', size: 10 },
        { name: 'a.txt', path: 'a.txt', size: 2 },
      ],
    });
    expect(folderView(FILES, 'docs')).toEqual({
      folders: [{ name: 'deep', path: 'docs/deep', files: 2, size: 9 }],
      files: [{ name: 'a.md', path: 'docs/a.md', size: 3 }],
    });
    expect(folderView(FILES, 'docs/deep').files.map((file) => file.name)).toEqual(['b.md', 'c.bin']);
    expect(folderView(FILES, 'nowhere')).toEqual({ folders: [], files: [] });
  });

  it('names the folders above a path, and its last segment', () => {
    expect(ancestorsOf('docs/deep/b.md')).toEqual([
      { name: 'docs', path: 'docs' },
      { name: 'deep', path: 'docs/deep' },
    ]);
    expect(ancestorsOf('README.md')).toEqual([]);
    expect(baseName('docs/deep/b.md')).toBe('b.md');
    expect(baseName('README.md')).toBe('README.md');
  });

  it('writes sizes for people', () => {
    expect(formatBytes(0)).toBe('0 bytes');
    expect(formatBytes(1)).toBe('1 byte');
    expect(formatBytes(1_023)).toBe('1023 bytes');
    expect(formatBytes(1_024)).toBe('1 KB');
    expect(formatBytes(1_536)).toBe('1.5 KB');
    expect(formatBytes(20 * 1_024 * 1_024)).toBe('20 MB');
  });

  it('reads UTF-8 text, and calls bytes with a NUL or invalid UTF-8 binary', () => {
    expect(textOf(new TextEncoder().encode('héllo\n'))).toBe('héllo\n');
    expect(textOf(new Uint8Array([]))).toBe('');
    expect(textOf(new Uint8Array([0x68, 0x00, 0x69]))).toBeUndefined();
    expect(textOf(new Uint8Array([0xff, 0xfe, 0x41]))).toBeUndefined();
  });
});
