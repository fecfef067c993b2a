import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFixture, type Fixture, invoke } from '../testing/fixtures.js';
import { shortDiff } from './patch.js';

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

const at = (name: string) => path.join(fx.workspace, name);
const put = (name: string, content: string | Buffer) => writeFile(at(name), content);
const read = (name: string) => readFile(at(name), 'utf8');

const SOURCE = [
  'function add(a, b) {',
  '  return a + b;',
  '}',
  '',
  'function sub(a, b) {',
  '  return a - b;',
  '}',
  '',
].join('\n');

describe('patch', () => {
  it('replaces an exact match, writes the file and returns a short unified diff naming the strategy', async () => {
    await put('math.js', SOURCE);
    const result = await invoke(fx.tool('patch'), {
      path: 'math.js',
      old_string: '  return a + b;',
      new_string: '  return a + b + 0;',
    });
    expect(result).toEqual({
      ok: true,
      content: [
        'Patched "math.js": 1 replacement (strategy: exact).',
        '--- a/math.js',
        '+++ b/math.js',
        '@@ -1,5 +1,5 @@',
        ' function add(a, b) {',
        '-  return a + b;',
        '+  return a + b + 0;',
        ' }',
        ' ',
        ' function sub(a, b) {',
      ].join('\n'),
    });
    expect(await read('math.js')).toBe(SOURCE.replace('a + b;', 'a + b + 0;'));
  });

  it('matches with a fuzzy strategy, re-indents, and says so', async () => {
    await put('f.py', 'def f():\n    if x:\n        return 1\n');
    const result = await invoke(fx.tool('patch'), {
      path: 'f.py',
      old_string: 'if x:\n    return 1',
      new_string: 'if x:\n    return 2',
    });
    expect(result.ok).toBe(true);
    expect(result.content).toMatch(
      /^Patched "f.py": 1 replacement \(strategy: line_trimmed\)\.\nold_string matched approximately/,
    );
    expect(await read('f.py')).toBe('def f():\n    if x:\n        return 2\n');
  });

  it('refuses no match, with the closest lines, and leaves the file alone', async () => {
    await put('math.js', SOURCE);
    const result = await invoke(fx.tool('patch'), {
      path: 'math.js',
      old_string: 'function mul(a, b) {',
      new_string: 'function times(a, b) {',
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_NO_MATCH' });
    expect(result.content).toMatch(/^No match for old_string in "math.js"; the file was not changed\.\n/);
    expect(result.content).toContain(
      'the first line that differs:\nfile line 5: function sub(a, b) {\nold_string line 1: function mul(a, b) {\nfile line 1: function add(a, b) {',
    );
    expect(await read('math.js')).toBe(SOURCE);
  });

  it("uses the design's wording in zh", async () => {
    await put('math.js', SOURCE);
    const tool = fx.tool('patch', { locale: 'zh' });
    const none = await invoke(tool, {
      path: 'math.js',
      old_string: 'nothing like it at all',
      new_string: 'x',
    });
    expect(none.content).toMatch(/^未找到匹配，请检查 old_string（"math.js" 未修改）。/);
    const many = await invoke(tool, { path: 'math.js', old_string: '}', new_string: '};' });
    expect(many.content).toMatch(
      /^找到 2 处匹配，请提供更多上下文或设置 replace_all=true（"math.js" 未修改）。/,
    );
  });

  it('refuses several matches unless replace_all, then replaces them all', async () => {
    await put('math.js', SOURCE);
    const tool = fx.tool('patch');
    const ambiguous = await invoke(tool, {
      path: 'math.js',
      old_string: '(a, b) {',
      new_string: '(a, b, c) {',
    });
    expect(ambiguous).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_AMBIGUOUS' });
    expect(ambiguous.content).toMatch(
      /^Found 2 matches in "math.js"; provide more context or set replace_all=true\./,
    );
    expect(ambiguous.content).toContain('(1 on line 1, 1 on line 5)');
    expect(await read('math.js')).toBe(SOURCE);
    const all = await invoke(tool, {
      path: 'math.js',
      old_string: '(a, b) {',
      new_string: '(a, b, c) {',
      replace_all: true,
    });
    expect(all.content).toMatch(/^Patched "math.js": 2 replacements \(strategy: exact\)\./);
    expect(await read('math.js')).toBe(SOURCE.replaceAll('(a, b) {', '(a, b, c) {'));
  });

  it('refuses replace_all over approximate matches', async () => {
    const content =
      'function a() {\n  const x = 1;\n  return x;\n}\nfunction a() {\n  const y = 1;\n  return y;\n}\n';
    await put('a.js', content);
    const result = await invoke(fx.tool('patch'), {
      path: 'a.js',
      old_string: 'function a() {\n  const z = 1;\n  return z;\n}',
      new_string: 'gone',
      replace_all: true,
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_FUZZY_REPLACE_ALL' });
    expect(await read('a.js')).toBe(content);
  });

  it('refuses quotes escaped by mistake (ESCAPE_DRIFT) and leaves the file alone', async () => {
    const source = "def greet(name):\n    print('hello ' + name)\n    return name\n";
    await put('greet.py', source);
    const result = await invoke(fx.tool('patch'), {
      path: 'greet.py',
      old_string: "def greet(name):\n    print(\\'hello \\' + name)\n    return name",
      new_string: "def greet(name):\n    print(\\'hi \\' + name)\n    return name",
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_ESCAPE_DRIFT' });
    expect(result.content).toMatch(/^"greet.py" was not changed\.\n/);
    expect(result.content).toContain('unescaped');
    expect(await read('greet.py')).toBe(source);
  });

  it("patches a file that really has \\' where old_string matched approximately", async () => {
    await put('s.js', "if (x) {  \n    const s = 'it\\'s';\n}\n");
    const result = await invoke(fx.tool('patch'), {
      path: 's.js',
      old_string: "if (x) {\n    const s = 'it\\'s';",
      new_string: "if (x) {\n    const s = 'it\\'s here';",
    });
    expect(result.ok).toBe(true);
    expect(result.content).toContain('(strategy: line_trimmed)');
    expect(await read('s.js')).toBe("if (x) {\n    const s = 'it\\'s here';\n}\n");
  });

  it('shows where a multi-line old_string comes closest: the first differing line and its counterpart', async () => {
    await put('math.js', SOURCE);
    const result = await invoke(fx.tool('patch'), {
      path: 'math.js',
      old_string: 'function sub(a, b) {\n  return b - a - 1;\n}',
      new_string: 'function sub(a, b) {\n  return b - a;\n}',
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_NO_MATCH' });
    expect(result.content).toContain('file line 6:   return a - b;\nold_string line 2:   return b - a - 1;');
  });

  it('lists a line with several matches once (regression: "lines 1, 1")', async () => {
    await put('calls.js', 'f(a); f(a);\ng(f(a));\n');
    const result = await invoke(fx.tool('patch'), {
      path: 'calls.js',
      old_string: 'f(a)',
      new_string: 'f(b)',
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_AMBIGUOUS' });
    expect(result.content).toContain('(2 on line 1, 1 on line 2)');
  });

  it('words a whitespace-only old_string apart from an empty one', async () => {
    await put('math.js', SOURCE);
    const tool = fx.tool('patch');
    const empty = await invoke(tool, { path: 'math.js', old_string: '', new_string: 'x' });
    const blank = await invoke(tool, { path: 'math.js', old_string: '\n\n', new_string: 'x' });
    expect(empty.content).toContain('old_string is empty');
    expect(blank).toMatchObject({ ok: false, code: 'ERR_TOOL_PATCH_EMPTY_SEARCH' });
    expect(blank.content).toContain('old_string is only whitespace (2 line breaks)');
  });

  it('refuses an empty old_string and identical strings', async () => {
    await put('math.js', SOURCE);
    const tool = fx.tool('patch');
    expect(await invoke(tool, { path: 'math.js', old_string: '  ', new_string: 'x' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_PATCH_EMPTY_SEARCH',
    });
    expect(await invoke(tool, { path: 'math.js', old_string: '}', new_string: '}' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_PATCH_IDENTICAL',
    });
    expect(await read('math.js')).toBe(SOURCE);
  });

  it('reports "already applied" without writing when sent twice', async () => {
    await put('math.js', SOURCE);
    const tool = fx.tool('patch');
    const args = { path: 'math.js', old_string: '  return a - b;', new_string: '  return a - b - 0;' };
    expect((await invoke(tool, args)).ok).toBe(true);
    const before = await stat(at('math.js'));
    const again = await invoke(tool, args);
    expect(again.ok).toBe(true);
    expect(again.content).toMatch(/^Already applied: "math.js" has new_string and no longer has old_string/);
    expect((await stat(at('math.js'))).ino).toBe(before.ino);
  });

  it('reports "already applied" for an insertion that keeps old_string, instead of inserting twice', async () => {
    await put('list.txt', 'a\nb\nd\n');
    const tool = fx.tool('patch');
    const args = { path: 'list.txt', old_string: 'b\n', new_string: 'b\nc\n' };
    expect((await invoke(tool, args)).ok).toBe(true);
    expect(await read('list.txt')).toBe('a\nb\nc\nd\n');
    const again = await invoke(tool, args);
    expect(again.content).toMatch(/^Already applied/);
    expect(await read('list.txt')).toBe('a\nb\nc\nd\n');
  });

  it('keeps a BOM and CRLF line endings', async () => {
    await put('win.txt', '\uFEFFone\r\ntwo\r\nthree\r\n');
    const result = await invoke(fx.tool('patch'), {
      path: 'win.txt',
      old_string: 'two\n',
      new_string: 'TWO\nand a half\n',
    });
    expect(result.ok).toBe(true);
    expect(await readFile(at('win.txt'))).toEqual(Buffer.from('\uFEFFone\r\nTWO\r\nand a half\r\nthree\r\n'));
    expect(result.content).not.toContain('\r');
  });

  it('keeps the file mode', async () => {
    await put('run.sh', '#!/bin/sh\necho a\n');
    await chmod(at('run.sh'), 0o755);
    await invoke(fx.tool('patch'), { path: 'run.sh', old_string: 'echo a', new_string: 'echo b' });
    expect((await stat(at('run.sh'))).mode & 0o777).toBe(0o755);
  });

  it('refuses binary, non-UTF-8, too large, missing and directory targets', async () => {
    await put('bin', Buffer.from([0x61, 0x00, 0x62]));
    await put('latin1.txt', Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
    await put('big.txt', 'x'.repeat(200));
    await mkdir(at('dir'));
    const tool = fx.tool('patch', { limits: { patchMaxFileBytes: 100 } });
    const cases: [string, string][] = [
      ['bin', 'ERR_TOOL_FILE_BINARY'],
      ['latin1.txt', 'ERR_TOOL_FILE_ENCODING'],
      ['big.txt', 'ERR_TOOL_FILE_TOO_LARGE'],
      ['missing.txt', 'ERR_TOOL_NOT_FOUND'],
      ['dir', 'ERR_TOOL_NOT_A_FILE'],
    ];
    for (const [file, code] of cases) {
      expect(await invoke(tool, { path: file, old_string: 'a', new_string: 'b' }), file).toMatchObject({
        ok: false,
        code,
      });
    }
    expect(await readFile(at('latin1.txt'))).toEqual(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  });

  it('validates its schema (design 4.1)', async () => {
    const result = await invoke(fx.tool('patch'), {
      path: 'a',
      old_string: 'x',
      new_string: 'y',
      replace_all: 'yes',
    });
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_ARGS_INVALID' });
    expect(result.content).toContain('`replace_all` must be a boolean (got "yes")');
  });
});

describe('shortDiff', () => {
  it('stops after the line budget and says how much is left', () => {
    const before = Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join('');
    const after = Array.from({ length: 20 }, (_, i) => `LINE ${i}\n`).join('');
    const diff = shortDiff('f.txt', before, after, 5).split('\n');
    expect(diff.slice(0, 3)).toEqual(['--- a/f.txt', '+++ b/f.txt', '@@ -1,20 +1,20 @@']);
    expect(diff).toHaveLength(8);
    expect(diff.at(-1)).toBe('[... 36 more diff lines not shown]');
  });
});
