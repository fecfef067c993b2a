import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { collectFiles, formatBytes } from './collect-files.js';
import { UsageError } from './exit-codes.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-files-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function put(path: string, content: string | Buffer): Promise<void> {
  await mkdir(join(dir, path, '..'), { recursive: true });
  await writeFile(join(dir, path), content);
}

describe('collectFiles', () => {
  it('reads text files by relative path, skipping node_modules, .git, binaries and links', async () => {
    await put('README.md', '# hi\n');
    await put('src/a.ts', 'export const a = 1;\n');
    await put('src/deep/b.txt', 'b\n');
    await put('node_modules/x/index.js', 'no');
    await put('src/node_modules/y.js', 'no');
    await put('.git/HEAD', 'ref: refs/heads/main\n');
    await put('logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x01]));
    await put('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    await symlink(join(dir, 'README.md'), join(dir, 'link.md'));

    const result = await collectFiles(dir);
    expect(result.files).toEqual({
      'README.md': '# hi\n',
      'src/a.ts': 'export const a = 1;\n',
      'src/deep/b.txt': 'b\n',
    });
    expect(result.totalBytes).toBe(5 + 20 + 2);
    expect(result.skipped).toEqual([
      { path: 'latin1.txt', reason: 'binary' },
      { path: 'link.md', reason: 'link' },
      { path: 'logo.png', reason: 'binary' },
    ]);
  });

  it('accepts exactly the limit and refuses one byte over, naming the largest files', async () => {
    await put('a.txt', 'x'.repeat(600));
    await put('b.txt', 'y'.repeat(400));
    await expect(collectFiles(dir, { maxBytes: 1000 })).resolves.toMatchObject({ totalBytes: 1000 });
    await put('c.txt', 'z');
    const error = await collectFiles(dir, { maxBytes: 1000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain('add up to 1001 B, over the 1000 B limit');
    expect((error as Error).message).toContain('largest: a.txt 600 B, b.txt 400 B, c.txt 1 B');
  });

  it('refuses over 1 MiB by default', async () => {
    await put('big.txt', 'x'.repeat(1024 * 1024 + 1));
    await expect(collectFiles(dir)).rejects.toThrow(/over the 1 MiB limit/);
  });

  it('refuses a missing directory', async () => {
    await expect(collectFiles(join(dir, 'nope'))).rejects.toThrow(/--files .*nope: no such directory/);
  });

  it('formats sizes', () => {
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(1024 * 1024)).toBe('1 MiB');
  });
});
