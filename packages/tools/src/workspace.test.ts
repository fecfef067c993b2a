import { lstat, mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_NAME_BYTES, MAX_PATH_BYTES, pathLengthProblem } from './confine-path.js';
import { createFixture, type Fixture, invoke } from './testing/fixtures.js';
import { Workspace } from './workspace.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
  await writeFile(path.join(fx.outside, 'secret.txt'), 'SECRET\n');
  await writeFile(path.join(fx.sibling, 'secret.txt'), 'SIBLING SECRET\n');
  await writeFile(path.join(fx.workspace, 'inside.txt'), 'inside\n');
  await symlink(fx.outside, path.join(fx.workspace, 'linkdir'));
  await symlink(path.join(fx.outside, 'secret.txt'), path.join(fx.workspace, 'link.txt'));
  await symlink(path.join(fx.outside, 'nope.txt'), path.join(fx.workspace, 'dangling.txt'));
  await symlink(path.join(fx.workspace, 'loop-b'), path.join(fx.workspace, 'loop-a'));
  await symlink(path.join(fx.workspace, 'loop-a'), path.join(fx.workspace, 'loop-b'));
});

afterEach(async () => {
  await fx.cleanup();
});

/** Everything outside the workspace, as it was before the test. */
async function outsideUntouched(): Promise<void> {
  expect(await readdir(fx.outside)).toEqual(['secret.txt']);
  expect(await readFile(path.join(fx.outside, 'secret.txt'), 'utf8')).toBe('SECRET\n');
  expect(await readdir(fx.sibling)).toEqual(['secret.txt']);
  expect(await readFile(path.join(fx.sibling, 'secret.txt'), 'utf8')).toBe('SIBLING SECRET\n');
  expect((await readdir(fx.base)).sort()).toEqual(['outside', 'ws', 'ws-sibling']);
}

interface EscapeCase {
  name: string;
  path: () => string;
  code: string;
}

const corpus: EscapeCase[] = [
  { name: '../ escape', path: () => '../outside/secret.txt', code: 'ERR_TOOL_PATH_OUTSIDE' },
  {
    name: '.. escape after a subdirectory',
    path: () => 'sub/../../outside/secret.txt',
    code: 'ERR_TOOL_PATH_OUTSIDE',
  },
  {
    name: 'absolute path outside',
    path: () => path.join(fx.outside, 'secret.txt'),
    code: 'ERR_TOOL_PATH_OUTSIDE',
  },
  { name: 'absolute path to /etc', path: () => '/etc/passwd', code: 'ERR_TOOL_PATH_OUTSIDE' },
  {
    name: 'sibling directory whose name starts with the workspace name (absolute)',
    path: () => path.join(fx.sibling, 'secret.txt'),
    code: 'ERR_TOOL_PATH_OUTSIDE',
  },
  {
    name: 'sibling directory whose name starts with the workspace name (relative)',
    path: () => '../ws-sibling/secret.txt',
    code: 'ERR_TOOL_PATH_OUTSIDE',
  },
  {
    name: 'symlinked directory pointing out',
    path: () => 'linkdir/secret.txt',
    code: 'ERR_TOOL_PATH_OUTSIDE',
  },
  { name: 'symlink as the final component', path: () => 'link.txt', code: 'ERR_TOOL_PATH_OUTSIDE' },
  { name: 'dangling symlink', path: () => 'dangling.txt', code: 'ERR_TOOL_PATH_SYMLINK' },
  {
    name: 'symlinked ancestor of a file that does not exist yet',
    path: () => 'linkdir/new-dir/new.txt',
    code: 'ERR_TOOL_PATH_OUTSIDE',
  },
  { name: 'symlink loop', path: () => 'loop-a', code: 'ERR_TOOL_PATH_SYMLINK' },
  { name: 'NUL byte', path: () => 'inside.txt\u0000../../outside/secret.txt', code: 'ERR_TOOL_PATH_INVALID' },
  { name: 'empty path', path: () => '', code: 'ERR_TOOL_PATH_INVALID' },
];

describe('escape corpus: every file tool refuses every entry and touches nothing outside', () => {
  for (const entry of corpus) {
    it(entry.name, async () => {
      const p = entry.path();
      const calls: [string, object][] = [
        ['read_file', { path: p }],
        ['write_file', { path: p, content: 'PWNED' }],
        ['patch', { path: p, old_string: 'SECRET', new_string: 'PWNED' }],
        ['list_dir', { path: p }],
      ];
      for (const [name, args] of calls) {
        const result = await invoke(fx.tool(name), args);
        expect(result, `${name} ${JSON.stringify(p)}`).toMatchObject({ ok: false, code: entry.code });
        expect(result.content).not.toContain('SECRET');
      }
      await outsideUntouched();
    });
  }

  it('keeps the symlinks themselves in place (a refused write does not replace the link)', async () => {
    await invoke(fx.tool('write_file'), { path: 'link.txt', content: 'x' });
    await invoke(fx.tool('write_file'), { path: 'dangling.txt', content: 'x' });
    expect((await lstat(path.join(fx.workspace, 'link.txt'))).isSymbolicLink()).toBe(true);
    expect((await lstat(path.join(fx.workspace, 'dangling.txt'))).isSymbolicLink()).toBe(true);
  });
});

describe('paths that stay inside', () => {
  it('accepts an absolute path inside the workspace', async () => {
    const result = await invoke(fx.tool('read_file'), { path: path.join(fx.workspace, 'inside.txt') });
    expect(result).toMatchObject({ ok: true });
    expect(result.content).toContain('inside');
  });

  it('accepts .. that stays inside', async () => {
    await mkdir(path.join(fx.workspace, 'sub'));
    const result = await invoke(fx.tool('read_file'), { path: 'sub/../inside.txt' });
    expect(result).toMatchObject({ ok: true });
  });

  it('follows a symlink whose target is inside, for reading and writing (the link stays)', async () => {
    await symlink(path.join(fx.workspace, 'inside.txt'), path.join(fx.workspace, 'inlink.txt'));
    expect((await invoke(fx.tool('read_file'), { path: 'inlink.txt' })).content).toContain('inside');
    expect(await invoke(fx.tool('write_file'), { path: 'inlink.txt', content: 'new\n' })).toMatchObject({
      ok: true,
    });
    expect(await readFile(path.join(fx.workspace, 'inside.txt'), 'utf8')).toBe('new\n');
    expect((await lstat(path.join(fx.workspace, 'inlink.txt'))).isSymbolicLink()).toBe(true);
  });

  it('works when the workspace is given through a symlink', async () => {
    const alias = path.join(fx.base, 'alias');
    await symlink(fx.workspace, alias);
    const result = await invoke(fx.tool('read_file', { workspace: alias }), {
      path: path.join(alias, 'inside.txt'),
    });
    expect(result).toMatchObject({ ok: true });
    expect(
      await invoke(fx.tool('read_file', { workspace: alias }), {
        path: path.join(fx.workspace, 'inside.txt'),
      }),
    ).toMatchObject({ ok: true });
  });
});

describe('Workspace: swaps after resolution are caught at open time', () => {
  it('refuses a final component replaced by a symlink (O_NOFOLLOW)', async () => {
    const ws = new Workspace(fx.workspace);
    const target = await ws.resolve('inside.txt');
    await rename(path.join(fx.workspace, 'inside.txt'), path.join(fx.workspace, 'moved.txt'));
    await symlink(path.join(fx.outside, 'secret.txt'), path.join(fx.workspace, 'inside.txt'));
    await expect(ws.openFile(target)).rejects.toMatchObject({ code: 'ERR_TOOL_PATH_SYMLINK' });
  });

  it('refuses a parent directory replaced by a symlink (checked through /proc/self/fd)', async () => {
    await mkdir(path.join(fx.workspace, 'dir'));
    await writeFile(path.join(fx.workspace, 'dir', 'secret.txt'), 'mine\n');
    const ws = new Workspace(fx.workspace);
    const target = await ws.resolve('dir/secret.txt');
    await rename(path.join(fx.workspace, 'dir'), path.join(fx.workspace, 'dir2'));
    await symlink(fx.outside, path.join(fx.workspace, 'dir'));
    await expect(ws.openFile(target)).rejects.toMatchObject({ code: 'ERR_TOOL_PATH_SYMLINK' });
  });

  it('refuses to create parents through a directory swapped for a symlink', async () => {
    await mkdir(path.join(fx.workspace, 'dir'));
    const ws = new Workspace(fx.workspace);
    const target = await ws.resolve('dir/a/b.txt');
    await rename(path.join(fx.workspace, 'dir'), path.join(fx.workspace, 'dir2'));
    await symlink(fx.outside, path.join(fx.workspace, 'dir'));
    await expect(ws.writeFileAtomic(target, Buffer.from('x'))).rejects.toMatchObject({
      code: 'ERR_TOOL_PATH_SYMLINK',
    });
    await outsideUntouched();
  });

  it('refuses a relative workspace', () => {
    expect(() => new Workspace('relative/ws')).toThrow(/absolute/);
  });
});

describe('paths too long for the file system', () => {
  it.each([
    ['a name of 256 bytes', 'a'.repeat(MAX_NAME_BYTES + 1), /name of 256 bytes/],
    ['a name of 128 two-byte characters', `dir/${'é'.repeat(128)}`, /name of 256 bytes/],
    ['a path of 4,097 bytes', `${'a/'.repeat(2_048)}b`, /4097 bytes long/],
  ])('refuses %s (ERR_TOOL_PATH_INVALID, not an I/O error)', async (_, input, why) => {
    expect(pathLengthProblem(input)).toMatch(why);
    const ws = new Workspace(fx.workspace);
    await expect(ws.resolve(input)).rejects.toMatchObject({ code: 'ERR_TOOL_PATH_INVALID' });
    const read = await invoke(fx.tool('read_file'), { path: input });
    expect(read).toMatchObject({ ok: false, code: 'ERR_TOOL_PATH_INVALID' });
    expect(read.content).toContain('Use a shorter path');
  });

  it('accepts a name of 255 bytes and a path of 4,096 bytes', async () => {
    expect(pathLengthProblem('a'.repeat(MAX_NAME_BYTES))).toBeUndefined();
    expect(pathLengthProblem(`${'a/'.repeat(MAX_PATH_BYTES / 2 - 1)}bb`)).toBeUndefined();
    const ws = new Workspace(fx.workspace);
    expect((await ws.resolve('a'.repeat(MAX_NAME_BYTES))).exists).toBe(false);
  });

  it('reads a 4,096-byte path that is longer once joined to the workspace as missing, not as an I/O error', async () => {
    const input = `${'abcdefg/'.repeat(511)}abcdefgh`;
    expect(pathLengthProblem(input)).toBeUndefined();
    const read = await invoke(fx.tool('read_file'), { path: input });
    expect(read).toMatchObject({ ok: false, code: 'ERR_TOOL_NOT_FOUND' });
  });
});
