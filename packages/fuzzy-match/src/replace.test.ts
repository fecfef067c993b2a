/**
 * fuzzyReplace: error codes and their order, replaceAll, the Hermes overlap case, re-indentation
 * (spaces and tabs), CRLF files, escape unescaping of newString, and unicode-preserving edits.
 */
import { describe, expect, it } from 'vitest';
import type { FuzzyOptions } from './index.js';
import { fuzzyFindAll, fuzzyReplace } from './index.js';

type ReplaceResult = ReturnType<typeof fuzzyReplace>;
type ReplaceOk = Extract<ReplaceResult, { ok: true }>;
type ReplaceErr = Extract<ReplaceResult, { ok: false }>;
type ErrorCode = ReplaceErr['code'];
type ReplaceOptions = FuzzyOptions & { replaceAll?: boolean };

function expectOk(r: ReplaceResult): ReplaceOk {
  if (!r.ok) throw new Error(`expected ok, got ${r.code}: ${r.message}`);
  return r;
}

function expectErr(r: ReplaceResult, code: ErrorCode, count: number): ReplaceErr {
  if (r.ok) throw new Error(`expected ${code}, got ok with content ${JSON.stringify(r.content)}`);
  expect(r.code).toBe(code);
  expect(r.count).toBe(count);
  expect(typeof r.message).toBe('string');
  expect(r.message.length).toBeGreaterThan(0);
  return r;
}

/** Replaces and checks the whole ok result against fuzzyFindAll on the same input. */
function replaced(
  content: string,
  oldString: string,
  newString: string,
  options: ReplaceOptions = {},
): ReplaceOk {
  const r = expectOk(fuzzyReplace(content, oldString, newString, options));
  const found = fuzzyFindAll(content, oldString, options);
  expect(r.matches).toEqual(found);
  expect(r.count).toBe(found.length);
  expect(r.strategy).toBe(found[0]?.strategy);
  return r;
}

function candidateLines(r: ReplaceErr): number[] {
  return (r.candidates ?? []).map((c) => c.line);
}

describe('errors, in order', () => {
  it('EMPTY_SEARCH for an empty search', () => {
    expectErr(fuzzyReplace('abc', '', 'x'), 'EMPTY_SEARCH', 0);
  });

  it('EMPTY_SEARCH for a whitespace-only search', () => {
    expectErr(fuzzyReplace('a  \n\t b', '  \n\t ', 'x'), 'EMPTY_SEARCH', 0);
  });

  it('a whitespace-only search has its own wording, naming what it holds', () => {
    const empty = expectErr(fuzzyReplace('abc', '', 'x'), 'EMPTY_SEARCH', 0);
    const blank = expectErr(fuzzyReplace('a  \n\t b', '  \n\t ', 'x'), 'EMPTY_SEARCH', 0);
    expect(empty.message).toContain('empty');
    expect(blank.message).not.toContain('empty');
    expect(blank.message).toContain('only whitespace (3 spaces, a tab and a line break)');
    expect(blank.message).toContain('at least one visible character');
  });

  it('EMPTY_SEARCH comes before IDENTICAL', () => {
    expectErr(fuzzyReplace('abc', '', ''), 'EMPTY_SEARCH', 0);
    expectErr(fuzzyReplace('abc', ' ', ' '), 'EMPTY_SEARCH', 0);
  });

  it('IDENTICAL when old equals new (and the search is found)', () => {
    expectErr(fuzzyReplace('abc', 'b', 'b'), 'IDENTICAL', 0);
  });

  it('IDENTICAL comes before NO_MATCH', () => {
    expectErr(fuzzyReplace('abc', 'zzz', 'zzz'), 'IDENTICAL', 0);
  });

  it('IDENTICAL comes before AMBIGUOUS', () => {
    expectErr(fuzzyReplace('foo\nfoo\n', 'foo', 'foo'), 'IDENTICAL', 0);
  });

  it('NO_MATCH lists the 3 closest lines (1-based), not the first 3 above the threshold', () => {
    const content = [
      'abcdeXXXXX', // 0.5
      'abcdefXXXX', // 0.6
      'zzzzzzzzzz', // 0
      'abcdefghiX', // 0.9
      'abcdefgXXX', // 0.7
      'abcdefghXX', // 0.8
    ].join('\n');
    const r = expectErr(fuzzyReplace(content, 'abcdefghij', 'x'), 'NO_MATCH', 0);
    const search = { searchLine: 1, searchText: 'abcdefghij' };
    expect([...(r.candidates ?? [])].sort((a, b) => a.line - b.line)).toEqual([
      { line: 4, text: 'abcdefghiX', ...search },
      { line: 5, text: 'abcdefgXXX', ...search },
      { line: 6, text: 'abcdefghXX', ...search },
    ]);
  });

  it('NO_MATCH candidates need similarity >= 0.5 (inclusive)', () => {
    const content = 'abcdXXXXXX\nabcdeXXXXX\nzzzzzzzzzz'; // 0.4, 0.5, 0
    const r = expectErr(fuzzyReplace(content, 'abcdefghij', 'x'), 'NO_MATCH', 0);
    expect(r.candidates).toEqual([{ line: 2, text: 'abcdeXXXXX', searchLine: 1, searchText: 'abcdefghij' }]);
  });

  it('NO_MATCH with nothing close has no candidates', () => {
    const r = expectErr(fuzzyReplace('alpha\nbeta', 'zzzzzz', 'x'), 'NO_MATCH', 0);
    expect(r.candidates ?? []).toEqual([]);
  });

  it('NO_MATCH for a multi-line search: at most 3 candidates, real line numbers', () => {
    const content = 'one two three\nalpha\nbeta\ngamma';
    const r = expectErr(
      fuzzyReplace(content, 'one two thre\nfour five six\nseven eight', 'x'),
      'NO_MATCH',
      0,
    );
    const lines = content.split('\n');
    expect((r.candidates ?? []).length).toBeLessThanOrEqual(3);
    for (const c of r.candidates ?? []) {
      expect(c.line).toBeGreaterThanOrEqual(1);
      expect(c.line).toBeLessThanOrEqual(lines.length);
      expect(c.text.trim()).toBe((lines[c.line - 1] ?? '').trim());
    }
  });

  it("NO_MATCH shows the closest window's first differing line, with the search's line it stands for", () => {
    const content = [
      'function total(items) {',
      '  let sum = 0;',
      '  for (const item of items) {',
      '    sum += item.price * item.count;',
      '  }',
      '  return sum;',
      '}',
    ].join('\n');
    const oldString = ['  for (const item of items) {', '    sum += item.cost;', '  }', '  return sum;'].join(
      '\n',
    );
    const r = expectErr(fuzzyReplace(content, oldString, 'x'), 'NO_MATCH', 0);
    expect(r.candidates?.[0]).toEqual({
      line: 4,
      text: '    sum += item.price * item.count;',
      searchLine: 2,
      searchText: '    sum += item.cost;',
    });
    expect(r.message).toContain(
      'the first line that differs:\nfile line 4:     sum += item.price * item.count;\nold_string line 2:     sum += item.cost;',
    );
  });

  it('NO_MATCH with no line of the search in the file: the window on the line closest to its first line', () => {
    const r = expectErr(
      fuzzyReplace(
        'alpha\nfunction sum(a, b) {\n  return a + b;\n}',
        'function sun(a, b) {\n  return a * b * 100;',
        'x',
      ),
      'NO_MATCH',
      0,
    );
    expect(r.candidates?.[0]).toEqual({
      line: 2,
      text: 'function sum(a, b) {',
      searchLine: 1,
      searchText: 'function sun(a, b) {',
    });
  });

  it('NO_MATCH: a first line that the file has is not shown as the difference', () => {
    // `foo` is too short to vote; the window is found by the closest line, and its line 2 differs.
    const r = expectErr(fuzzyReplace('x\nfoo\nbazooka', 'foo\nbarbell', 'y'), 'NO_MATCH', 0);
    expect(r.candidates?.[0]).toEqual({ line: 3, text: 'bazooka', searchLine: 2, searchText: 'barbell' });
  });

  it('AMBIGUOUS (exact): count and the first line of each match', () => {
    const r = expectErr(fuzzyReplace('foo()\nbar()\nfoo()\n', 'foo()', 'baz()'), 'AMBIGUOUS', 2);
    expect(r.candidates).toEqual([
      { line: 1, text: 'foo()', matches: 1 },
      { line: 3, text: 'foo()', matches: 1 },
    ]);
    expect(r.message).toContain('1 on line 1, 1 on line 3');
    expect('content' in r ? r.content : 'foo()\nbar()\nfoo()\n').toBe('foo()\nbar()\nfoo()\n');
  });

  it('regression: AMBIGUOUS lists a line once, with how many matches start on it', () => {
    const r = expectErr(fuzzyReplace('x = f(a) + f(a);\ny = f(a);\n', 'f(a)', 'g(a)'), 'AMBIGUOUS', 3);
    expect(r.candidates).toEqual([
      { line: 1, text: 'x = f(a) + f(a);', matches: 2 },
      { line: 2, text: 'y = f(a);', matches: 1 },
    ]);
    expect(r.message).toContain('old_string matches 3 places (2 on line 1, 1 on line 2)');
    expect(r.message).not.toContain('lines 1, 1');
  });

  it('AMBIGUOUS over more than ten lines names the first ten and counts the rest', () => {
    const content = Array.from({ length: 12 }, () => 'tick();').join('\n');
    const r = expectErr(fuzzyReplace(content, 'tick();', 'tock();'), 'AMBIGUOUS', 12);
    expect(r.message).toContain('1 on line 10 and more on 2 other lines');
  });

  it('AMBIGUOUS (line_trimmed): line numbers of the first matched lines', () => {
    const content = 'x\n  foo();\n  bar();\ny\n\tfoo();\n\tbar();';
    const r = expectErr(fuzzyReplace(content, 'foo();\nbar();', 'z();'), 'AMBIGUOUS', 2);
    expect(candidateLines(r)).toEqual([2, 5]);
    for (const c of r.candidates ?? []) expect(c.text.trim()).toBe('foo();');
  });

  it('AMBIGUOUS (block_anchor) without replaceAll', () => {
    const content = 'begin\n  x = 1\nend\nbegin\n  x = 2\nend';
    const r = expectErr(fuzzyReplace(content, 'begin\n  x = 3\nend', 'begin\n  x = 4\nend'), 'AMBIGUOUS', 2);
    expect(candidateLines(r)).toEqual([1, 4]);
  });

  it('FUZZY_REPLACE_ALL: replaceAll with block_anchor winning twice', () => {
    const content = 'begin\n  x = 1\nend\nbegin\n  x = 2\nend';
    const r = expectErr(
      fuzzyReplace(content, 'begin\n  x = 3\nend', 'begin\n  x = 4\nend', { replaceAll: true }),
      'FUZZY_REPLACE_ALL',
      2,
    );
    expect(r.candidates).toEqual([
      { line: 1, text: 'begin', matches: 1 },
      { line: 4, text: 'begin', matches: 1 },
    ]);
  });

  it('FUZZY_REPLACE_ALL: replaceAll with context_aware winning twice', () => {
    const content = 'function fooo() {\n  return 1;\n}\nfunction fooo() {\n  return 1;\n}';
    const r = expectErr(
      fuzzyReplace(content, 'function foo() {\n  return 1;\n}', 'function foo() {\n  return 2;\n}', {
        replaceAll: true,
      }),
      'FUZZY_REPLACE_ALL',
      2,
    );
    expect(candidateLines(r)).toEqual([1, 4]);
  });

  it('replaceAll with a single block_anchor match is allowed', () => {
    const r = replaced('begin\n  x = 1\nend\nother\n', 'begin\n  x = 3\nend', 'begin\n  x = 4\nend', {
      replaceAll: true,
    });
    expect(r.content).toBe('begin\n  x = 4\nend\nother\n');
    expect(r.count).toBe(1);
    expect(r.strategy).toBe('block_anchor');
  });

  it('a single context_aware match is replaced', () => {
    const r = replaced(
      'function fooo() {\n  return 1;\n}\n',
      'function foo() {\n  return 1;\n}',
      'function foo() {\n  return 2;\n}',
    );
    expect(r.strategy).toBe('context_aware');
    expect(r.content).toBe('function foo() {\n  return 2;\n}\n');
  });

  it('options reach the matcher through fuzzyReplace', () => {
    const content = 'start\nabcdX\nend';
    const oldString = 'start\nabcde\nend';
    const newString = 'start\nabcdf\nend';
    expect(replaced(content, oldString, newString).strategy).toBe('block_anchor');
    const flipped = replaced(content, oldString, newString, { blockAnchorSimilarity: 0.81 });
    expect(flipped.strategy).toBe('context_aware');
    expect(flipped.content).toBe('start\nabcdf\nend');
    expectErr(fuzzyReplace(content, oldString, newString, { contextLineSimilarity: 0.81 }), 'NO_MATCH', 0);
  });
});

describe('no silent change to unquoted lines', () => {
  it('regression: one line similar and one unrelated is NO_MATCH, not a rewrite of the unrelated line', () => {
    // context_aware used to take this window (1 of 2 lines >= 0.8 is 50%) and replace `deleteAll(records);`.
    const content = 'function run() {\n  const total = sum(values);\n  deleteAll(records);\n}\n';
    const r = expectErr(
      fuzzyReplace(
        content,
        'const total = sum(value);\nlogger.info(total);',
        'const total = sum(values) + 1;\nlogger.info(total);',
      ),
      'NO_MATCH',
      0,
    );
    expect('content' in r).toBe(false);
  });

  it('regression: block_anchor no longer rewrites a middle line that only the joined middle resembled', () => {
    const content = 'function f() {\n  validate(input);\n  return compute(input);\n}\n';
    expectErr(
      fuzzyReplace(
        content,
        'function f() {\n  validate(input);\n  return cache.get(key);\n}',
        'function f() {\n  validate(input);\n  return cache.get(key) ?? null;\n}',
      ),
      'NO_MATCH',
      0,
    );
  });

  it('an approximate match rewrites its own lines only: the lines around it are byte-identical', () => {
    const content = 'a();\r\nfunction fooo() {\r\n  return 1;\r\n}\r\nz();  \r\n';
    const r = replaced(content, 'function foo() {\n  return 1;\n}', 'function foo() {\n  return 2;\n}');
    expect(r.strategy).toBe('context_aware');
    expect(r.content).toBe('a();\r\nfunction foo() {\r\n  return 2;\r\n}\r\nz();  \r\n');
  });
});

describe('ESCAPE_DRIFT', () => {
  const python = "def greet(name):\n    print('hello ' + name)\n    return name\n";

  it('regression: escaped quotes in both strings no longer write backslashes through block_anchor', () => {
    // The escaped line scores 0.92 against the file's, so block_anchor matches the block; the new text
    // would have put print(\'hi \' + name) into the file.
    const oldString = "def greet(name):\n    print(\\'hello \\' + name)\n    return name";
    expect(fuzzyFindAll(python, oldString).map((m) => m.strategy)).toEqual(['block_anchor']);
    const r = expectErr(
      fuzzyReplace(python, oldString, "def greet(name):\n    print(\\'hi \\' + name)\n    return name"),
      'ESCAPE_DRIFT',
      1,
    );
    expect(r.message).toContain("\\'");
    expect(r.message).toContain('unescaped');
    expect(r.candidates).toEqual([{ line: 1, text: 'def greet(name):' }]);
  });

  it('escaped double quotes through context_aware are refused the same way', () => {
    const json = '{\n  "name": "tether",\n  "version": "1.0.0"\n}\n';
    const oldString = '\\"name\\": \\"tether\\",\n\\"version\\": \\"1.0.0\\"';
    expect(fuzzyFindAll(json, oldString).map((m) => m.strategy)).toEqual(['context_aware']);
    const r = expectErr(
      fuzzyReplace(json, oldString, '\\"name\\": \\"tether\\",\n\\"version\\": \\"1.1.0\\"'),
      'ESCAPE_DRIFT',
      1,
    );
    expect(r.message).toContain('\\"');
  });

  it("a file that really has \\' where a tolerant strategy matched is still patched", () => {
    const content = "function f() {\n    const s = 'it\\'s';\n    log(s);\n}\n";
    const r = replaced(content, "const s = 'it\\'s';\nlog(s);", "const s = 'it\\'s fine';\nlog(s);");
    expect(r.strategy).toBe('line_trimmed');
    expect(r.content).toBe("function f() {\n    const s = 'it\\'s fine';\n    log(s);\n}\n");
  });

  it('an approximate match on a line holding \\" keeps it patchable too', () => {
    const content = 'msg = "say \\"hi\\""\nsend(msg)\n';
    const r = replaced(content, 'msg = "say \\"ho\\""\nsend(msg)', 'msg = "say \\"hey\\""\nsend(msg)');
    expect(r.strategy).toBe('context_aware');
    expect(r.content).toBe('msg = "say \\"hey\\""\nsend(msg)\n');
  });

  it("\\' elsewhere in the file does not count: it must be where old_string matched", () => {
    const content = "a = 'it\\'s'\n\n  print('x')\n  done()\n";
    expectErr(fuzzyReplace(content, "print('x')\ndone()", "print(\\'y\\')\ndone()"), 'ESCAPE_DRIFT', 1);
  });

  it('a one-line old_string with escaped quotes matches nothing, and NO_MATCH says how to send it', () => {
    const r = expectErr(fuzzyReplace("print('hi')\n", "print(\\'hi\\')", "print(\\'ho\\')"), 'NO_MATCH', 0);
    expect(r.message).toContain(
      "old_string holds \\' (a backslash before a quote), which the file does not have",
    );
    expect(r.message).toContain('unescaped');
    const plain = expectErr(fuzzyReplace("print('hi')\n", "print('ha ha ha')", 'x'), 'NO_MATCH', 0);
    expect(plain.message).not.toContain('backslash');
  });

  it("an exact match is trusted: new_string may add \\' that the file does not have", () => {
    const r = replaced('x = 1\ny = 2\n', 'x = 1', "x = 'it\\'s'");
    expect(r.content).toBe("x = 'it\\'s'\ny = 2\n");
  });

  it('replaceAll checks every match', () => {
    // The first match's line has \' (in its comment); the second's has none.
    const content = "say('a',  1) // it\\'s\nsay('b', 1)\nsay('a',  1)\n";
    const r = expectErr(
      fuzzyReplace(content, "say('a', 1)", "say(\\'c\\', 1)", { replaceAll: true }),
      'ESCAPE_DRIFT',
      2,
    );
    expect(r.candidates).toEqual([{ line: 3, text: "say('a',  1)" }]);
  });
});

describe('replacing', () => {
  it('exact, single match', () => {
    const r = replaced('const a = 1;\nconst b = 2;\n', 'b = 2', 'b = 3');
    expect(r).toMatchObject({ content: 'const a = 1;\nconst b = 3;\n', count: 1, strategy: 'exact' });
  });

  it('exact, replaceAll replaces every match', () => {
    const r = replaced('a.b.a.b', 'a', 'xy', { replaceAll: true });
    expect(r).toMatchObject({ content: 'xy.b.xy.b', count: 2, strategy: 'exact' });
  });

  it('exact, replaceAll over overlapping occurrences takes them left to right without overlap', () => {
    expect(replaced('aaa', 'aa', 'b', { replaceAll: true })).toMatchObject({ content: 'ba', count: 1 });
    expect(replaced('aaaa', 'aa', 'b', { replaceAll: true })).toMatchObject({ content: 'bb', count: 2 });
  });

  it('Hermes overlap case: the line after three foo() lines survives replaceAll', () => {
    const content = '  foo()\n  foo()\n  foo()\nbar()\n';
    const r = replaced(content, 'foo()\nfoo()', 'baz()\nbaz()', { replaceAll: true });
    expect(r).toMatchObject({
      content: '  baz()\n  baz()\n  foo()\nbar()\n',
      count: 1,
      strategy: 'line_trimmed',
    });
  });

  it('Hermes overlap case with four foo() lines: two non-overlapping replacements', () => {
    const content = '  foo()\n  foo()\n  foo()\n  foo()\nbar()\n';
    const r = replaced(content, 'foo()\nfoo()', 'baz()\nbaz()', { replaceAll: true });
    expect(r).toMatchObject({
      content: '  baz()\n  baz()\n  baz()\n  baz()\nbar()\n',
      count: 2,
      strategy: 'line_trimmed',
    });
  });

  it('line_trimmed, replaceAll: each match re-indented by its own delta', () => {
    const content = '  foo();\n  bar();\nx\n    foo();\n    bar();';
    const r = replaced(content, 'foo();\nbar();', 'foo(1);\nbar(1);', { replaceAll: true });
    expect(r).toMatchObject({
      content: '  foo(1);\n  bar(1);\nx\n    foo(1);\n    bar(1);',
      count: 2,
      strategy: 'line_trimmed',
    });
  });

  it('line-based deletion replaces exactly the span (the trailing line break stays)', () => {
    const r = replaced('  x\n  y\nz', 'x\ny', '');
    expect(r).toMatchObject({ content: '\nz', strategy: 'line_trimmed' });
  });

  it('whitespace_normalized replaces the original run-length span', () => {
    const r = replaced('if (a  &&  b) {', 'a && b', 'a || b');
    expect(r).toMatchObject({ content: 'if (a || b) {', strategy: 'whitespace_normalized' });
  });

  it('whitespace_normalized, replaceAll', () => {
    const r = replaced('a  b; a\tb;', 'a b', 'c', { replaceAll: true });
    expect(r).toMatchObject({ content: 'c; c;', count: 2, strategy: 'whitespace_normalized' });
  });
});

describe('re-indentation', () => {
  it('adds the delta (4 spaces) to every line of newString', () => {
    const content = 'class A {\n    method() {\n        return 1;\n    }\n}\n';
    const r = replaced(
      content,
      'method() {\n    return 1;\n}',
      'method() {\n    const x = 1;\n    return x;\n}',
    );
    expect(r.strategy).toBe('line_trimmed');
    expect(r.content).toBe('class A {\n    method() {\n        const x = 1;\n        return x;\n    }\n}\n');
  });

  it("keeps newString's relative indentation", () => {
    const r = replaced('  if (a) {\n    b();\n  }', 'if (a) {\n  b();\n}', 'if (a) {\n  b();\n  c();\n}');
    expect(r.content).toBe('  if (a) {\n    b();\n    c();\n  }');
  });

  it('leaves blank lines of newString blank', () => {
    const r = replaced('def f():\n    a()\n    b()\n', 'a()\nb()', 'a()\n\nb()');
    expect(r.content).toBe('def f():\n    a()\n\n    b()\n');
  });

  it('removes a negative delta', () => {
    const r = replaced('foo();\nbar();\n', '    foo();\n    bar();', '    foo(1);\n    bar(1);');
    expect(r.content).toBe('foo(1);\nbar(1);\n');
  });

  it('tabs stay tabs: unindented old/new in a tab-indented file', () => {
    const r = replaced('if (x) {\n\tfoo();\n\tbar();\n}\n', 'foo();\nbar();', 'foo(1);\nbar(2);\nbaz();');
    expect(r.content).toBe('if (x) {\n\tfoo(1);\n\tbar(2);\n\tbaz();\n}\n');
  });

  it("tabs stay tabs: old/new indented with spaces get the file's tab", () => {
    const r = replaced(
      'if (x) {\n\tfoo();\n\tbar();\n}\n',
      '    foo();\n    bar();',
      '    foo(1);\n    bar(2);',
    );
    expect(r.content).toBe('if (x) {\n\tfoo(1);\n\tbar(2);\n}\n');
  });

  it('tabs stay tabs: nested newString lines start with the tab and stay nested', () => {
    const r = replaced('if (x) {\n\tfoo();\n\tbar();\n}\n', 'foo();\nbar();', 'if (y) {\n  baz();\n}');
    expect(r.content.startsWith('if (x) {\n')).toBe(true);
    expect(r.content.endsWith('\n}\n')).toBe(true);
    const region = r.content.slice('if (x) {\n'.length, -'\n}\n'.length).split('\n');
    expect(region.map((l) => l.trim())).toEqual(['if (y) {', 'baz();', '}']);
    for (const line of region) expect(line.startsWith('\t')).toBe(true);
    const indent = (l: string) => l.length - l.trimStart().length;
    expect(indent(region[1] ?? '')).toBeGreaterThan(indent(region[0] ?? ''));
    expect(indent(region[2] ?? '')).toBe(indent(region[0] ?? ''));
  });
});

describe('CRLF', () => {
  it("a line_trimmed match in a CRLF file: newString's breaks are written as CRLF", () => {
    const content = 'a\r\n  foo();\r\n  bar();\r\nz\r\n';
    const r = replaced(content, 'foo();\nbar();', 'foo(1);\nbar(1);\nbaz();');
    expect(r.matches.map((m) => [m.startIndex, m.endIndex])).toEqual([[3, 21]]);
    expect(r.content).toBe('a\r\n  foo(1);\r\n  bar(1);\r\n  baz();\r\nz\r\n');
  });

  it('an exact match in a CRLF file', () => {
    const r = replaced('x = 1;\r\ny = 2;\r\n', 'x = 1;', 'x = 1;\nw = 0;');
    expect(r.content).toBe('x = 1;\r\nw = 0;\r\ny = 2;\r\n');
  });

  it('a newString that already holds CRLF is not doubled', () => {
    const r = replaced('x = 1;\r\ny = 2;\r\n', 'x = 1;', 'x = 1;\r\nw = 0;');
    expect(r.content).toBe('x = 1;\r\nw = 0;\r\ny = 2;\r\n');
  });

  it('a file where most breaks are CRLF counts as CRLF', () => {
    const r = replaced('a\r\nb\r\nc\nd\r\n', 'b', 'b1\nb2');
    expect(r.content).toBe('a\r\nb1\r\nb2\r\nc\nd\r\n');
  });

  it('a file where most breaks are LF stays LF', () => {
    const r = replaced('a\nb\nc\r\nd\n', 'b', 'b1\nb2');
    expect(r.content).toBe('a\nb1\nb2\nc\r\nd\n');
  });

  it("a single-line match keeps the line's \\r\\n and replaces its trailing whitespace", () => {
    const r = replaced('x\r\n  y  \r\nz', 'y \t', 'w');
    expect(r.strategy).toBe('line_trimmed');
    expect(r.content).toBe('x\r\n  w\r\nz');
  });
});

describe('escape_normalized replacement', () => {
  it('unescapes newString the same way: no literal \\n is written', () => {
    const r = replaced('line1\nline2\n', 'line1\\nline2', 'first\\nsecond\\tx');
    expect(r.strategy).toBe('escape_normalized');
    expect(r.content).toBe('first\nsecond\tx\n');
    expect(r.content.includes('\\')).toBe(false);
  });

  it('does not unescape newString when exact wins on a literal backslash-n', () => {
    const r = replaced('s = "a\\nb";', '"a\\nb"', '"c\\nd"');
    expect(r.strategy).toBe('exact');
    expect(r.content).toBe('s = "c\\nd";');
  });
});

describe('unicode_normalized replacement', () => {
  it('text outside the span keeps its original characters; kept parts keep the smart quotes', () => {
    const content = '// \u201cquoted\u201d \u2014 note\nconst a = \u201cx\u201d;\n';
    const r = replaced(content, 'const a = "x";', 'const a = "y";');
    expect(r.strategy).toBe('unicode_normalized');
    expect(r.content).toBe('// \u201cquoted\u201d \u2014 note\nconst a = \u201cy\u201d;\n');
  });

  it('text after the span on the same line is untouched', () => {
    const content = 'x = \u201ca\u201d; // \u201ckeep\u201d \u2014 this';
    const r = replaced(content, 'x = "a";', 'x = "b";');
    expect(r.content).toBe('x = \u201cb\u201d; // \u201ckeep\u201d \u2014 this');
  });

  it('an edit of one word does not flatten the em dashes around it', () => {
    const r = replaced('a \u2014 b \u2014 c', 'a -- b -- c', 'a -- B -- c');
    expect(r.content).toBe('a \u2014 B \u2014 c');
  });

  it('replaceAll keeps the original quotes in every match', () => {
    const r = replaced('\u201ca\u201d\n\u201ca\u201d', '"a"', '"b"', { replaceAll: true });
    expect(r).toMatchObject({
      content: '\u201cb\u201d\n\u201cb\u201d',
      count: 2,
      strategy: 'unicode_normalized',
    });
  });

  it('line mode (mapped lines trimmed): indentation and typographic characters of kept lines survive', () => {
    const content = '  say \u201chi\u201d \u2014 ok\n  next\n';
    const r = replaced(content, 'say "hi" -- ok\nnext', 'say "hi" -- ok\nnext2');
    expect(r.strategy).toBe('unicode_normalized');
    expect(r.matches.map((m) => [m.startIndex, m.endIndex])).toEqual([[0, 22]]);
    expect(r.content).toBe('  say \u201chi\u201d \u2014 ok\n  next2\n');
  });

  it("kept parts use the file's ASCII when the search held the smart characters", () => {
    const r = replaced('say "hi"', 'say \u201chi\u201d', 'say \u201cbye\u201d');
    expect(r.content).toBe('say "bye"');
  });
});
