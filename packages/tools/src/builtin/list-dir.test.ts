import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
  const at = (...parts: string[]) => path.join(fx.workspace, ...parts);
  await mkdir(at('src', 'lib', 'deep'), { recursive: true });
  await mkdir(at('node_modules', 'a'), { recursive: true });
  await mkdir(at('node_modules', 'b'));
  await mkdir(at('.git', 'objects'), { recursive: true });
  await writeFile(at('node_modules', 'index.js'), '');
  await writeFile(at('README.md'), '# hi\n');
  await writeFile(at('.env.example'), 'X=1\n');
  await writeFile(at('src', 'index.ts'), '');
  await writeFile(at('src', 'lib', 'util.ts'), '');
  await writeFile(at('src', 'lib', 'deep', 'x.ts'), '');
  await symlink(fx.outside, at('out-link'));
  await symlink('src/index.ts', at('in-link'));
});

afterEach(async () => {
  await fx.cleanup();
});

describe('list_dir', () => {
  it('lists two levels by default, directories first and marked, noise summarised, links not followed', async () => {
    const result = await invoke(fx.tool('list_dir'), {});
    expect(result).toEqual({
      ok: true,
      content: [
        '"." (depth 2):',
        '.git/  [1 entries, not listed]',
        'node_modules/  [3 entries, not listed]',
        'src/',
        '  lib/',
        '  index.ts',
        '.env.example',
        'README.md',
        'in-link -> src/index.ts',
        `out-link -> ${fx.outside}  [outside the workspace: not readable]`,
        '[1 directory was not expanded at depth 2; list them directly or raise depth.]',
      ].join('\n'),
    });
  });

  it('lists a subdirectory to the requested depth', async () => {
    const result = await invoke(fx.tool('list_dir'), { path: 'src', depth: 3 });
    expect(result.content).toBe(
      ['"src" (depth 3):', 'lib/', '  deep/', '    x.ts', '  util.ts', 'index.ts'].join('\n'),
    );
  });

  it('lists a noise directory when asked for it directly', async () => {
    const result = await invoke(fx.tool('list_dir'), { path: 'node_modules', depth: 1 });
    expect(result.content).toBe(
      [
        '"node_modules" (depth 1):',
        'a/',
        'b/',
        'index.js',
        '[2 directories were not expanded at depth 1; list them directly or raise depth.]',
      ].join('\n'),
    );
  });

  it('stops at the entry cap and lowers a depth above the maximum', async () => {
    const tool = fx.tool('list_dir', { limits: { listDirMaxEntries: 3, listDirMaxDepth: 2 } });
    const result = await invoke(tool, { depth: 9 });
    expect(result.content).toBe(
      [
        '"." (depth 2):',
        '.git/  [1 entries, not listed]',
        'node_modules/  [3 entries, not listed]',
        'src/',
        '[depth 9 was lowered to the maximum, 2.]',
        '[Stopped after 3 entries; more are not shown. List a subdirectory, or use a smaller depth.]',
      ].join('\n'),
    );
  });

  it('reports an empty directory', async () => {
    await mkdir(path.join(fx.workspace, 'empty'));
    expect(await invoke(fx.tool('list_dir'), { path: 'empty' })).toEqual({
      ok: true,
      content: '"empty" is an empty directory.',
    });
  });

  it('refuses a missing directory, a file and a depth below 1', async () => {
    const tool = fx.tool('list_dir');
    expect(await invoke(tool, { path: 'nope' })).toMatchObject({ ok: false, code: 'ERR_TOOL_NOT_FOUND' });
    expect(await invoke(tool, { path: 'README.md' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_NOT_A_DIRECTORY',
    });
    expect(await invoke(tool, { depth: 0 })).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
  });
});
