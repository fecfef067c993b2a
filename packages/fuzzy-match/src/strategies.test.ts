/**
 * Table-driven cases per strategy: for each of the nine strategies, the inputs on which it is the first
 * (in the design's order) to find a match, with the exact spans it must report. `indent_flexible` and
 * `trimmed_boundary` can never win after `line_trimmed` (which trims both ends of every line), so their
 * tables assert that `line_trimmed` answers inputs shaped like theirs.
 */
import { describe, expect, it } from 'vitest';
import type { FuzzyMatchResult, FuzzyOptions, StrategyName } from './index.js';
import { fuzzyFindAll } from './index.js';

interface Case {
  name: string;
  content: string;
  search: string;
  /** Expected `[startIndex, endIndex]` of every match, left to right. */
  spans: Array<[number, number]>;
  /** Expected `similarity` per match (approximate strategies only). */
  similarity?: number[];
  options?: FuzzyOptions;
}

function expectMatches(strategy: StrategyName, c: Case): FuzzyMatchResult[] {
  const results = fuzzyFindAll(c.content, c.search, c.options);
  expect(
    results.map((r) => ({ strategy: r.strategy, startIndex: r.startIndex, endIndex: r.endIndex })),
  ).toEqual(c.spans.map(([startIndex, endIndex]) => ({ strategy, startIndex, endIndex })));
  for (const r of results) {
    expect(r.matchedText).toBe(c.content.slice(r.startIndex, r.endIndex));
  }
  if (c.similarity !== undefined) {
    expect(results.map((r) => r.similarity)).toEqual(c.similarity.map((s) => expect.closeTo(s, 9)));
  }
  return results;
}

function table(strategy: StrategyName, cases: Case[]): void {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expectMatches(strategy, c);
  });
}

describe('exact', () => {
  table('exact', [
    { name: 'single occurrence mid-line', content: 'hello world', search: 'world', spans: [[6, 11]] },
    {
      name: 'all occurrences, left to right',
      content: 'abab ab',
      search: 'ab',
      spans: [
        [0, 2],
        [2, 4],
        [5, 7],
      ],
    },
    {
      name: 'overlapping occurrences are not reported (aaa / aa)',
      content: 'aaa',
      search: 'aa',
      spans: [[0, 2]],
    },
    {
      name: 'overlapping occurrences: greedy left to right (aaaaa / aa)',
      content: 'aaaaa',
      search: 'aa',
      spans: [
        [0, 2],
        [2, 4],
      ],
    },
    {
      name: 'starts and ends mid-line across a line break',
      content: 'let a = 1;\nlet b = 2;',
      search: '1;\nlet b',
      spans: [[8, 16]],
    },
    {
      name: 'leading whitespace of the search is part of the match',
      content: 'x\n  foo()\n',
      search: '  foo()',
      spans: [[2, 9]],
    },
    {
      name: 'a search holding CRLF matches a CRLF file as is',
      content: 'a\r\nb\r\n',
      search: 'a\r\nb',
      spans: [[0, 4]],
    },
    {
      name: 'exact decides alone: the re-indented copy that only line_trimmed would find is not reported',
      content: 'foo(a)\nbar\n  foo(a)\n  bar',
      search: 'foo(a)\nbar',
      spans: [[0, 10]],
    },
    {
      name: 'exact decides alone: the smart-quoted copy that only unicode_normalized would find is not reported',
      content: 'say "hi" and say \u201chi\u201d',
      search: 'say "hi"',
      spans: [[0, 8]],
    },
    {
      name: 'a literal backslash-n in the file is matched exactly (no unescaping)',
      content: 's = "a\\nb";',
      search: '"a\\nb"',
      spans: [[4, 10]],
    },
  ]);
});

describe('line_trimmed', () => {
  table('line_trimmed', [
    {
      name: 'whole lines, indentation of the first line included, final newline excluded',
      content: '  if (x) {\n    y();\n  }\n',
      search: 'if (x) {\ny();\n}',
      spans: [[0, 23]],
    },
    {
      name: 'search more indented than the file',
      content: 'foo();\nbar();',
      search: '    foo();\n    bar();',
      spans: [[0, 13]],
    },
    {
      name: 'single line, the \\r of a CRLF break is not in the span',
      content: 'a\r\n\tfoo\r\nb',
      search: ' foo',
      spans: [[3, 7]],
    },
    {
      name: "trailing whitespace of the file's line is in the span, the \\r is not",
      content: 'x\r\n  y  \r\nz',
      search: '\ty',
      spans: [[3, 8]],
    },
    {
      name: 'multi-line in a CRLF file: span ends before the last line break',
      content: 'a\r\n  foo();\r\n  bar();\r\nz\r\n',
      search: 'foo();\nbar();',
      spans: [[3, 21]],
    },
    {
      name: 'Hermes overlap case: three foo() lines, two-line search, one match',
      content: '  foo()\n  foo()\n  foo()\nbar()\n',
      search: 'foo()\nfoo()',
      spans: [[0, 15]],
    },
    {
      name: 'four foo() lines: two non-overlapping matches',
      content: '  foo()\n  foo()\n  foo()\n  foo()\nbar()\n',
      search: 'foo()\nfoo()',
      spans: [
        [0, 15],
        [16, 31],
      ],
    },
  ]);
});

describe('indent_flexible never wins: line_trimmed answers inputs shaped like its own', () => {
  table('line_trimmed', [
    {
      name: 'only leading indentation differs (spaces)',
      content: '    alpha();\n        beta();',
      search: 'alpha();\nbeta();',
      spans: [[0, 28]],
    },
    {
      name: 'only leading indentation differs (tabs in the file, spaces in the search)',
      content: '\t\tx = 1;\n\t\ty = 2;',
      search: '  x = 1;\n  y = 2;',
      spans: [[0, 17]],
    },
  ]);
});

describe('trimmed_boundary never wins: line_trimmed answers inputs shaped like its own', () => {
  table('line_trimmed', [
    {
      name: 'first and last lines differ only by surrounding whitespace, middle identical',
      content: '  start {\n    mid();\n  end }',
      search: 'start {\n    mid();\nend }',
      spans: [[0, 28]],
    },
  ]);
});

describe('whitespace_normalized', () => {
  table('whitespace_normalized', [
    {
      name: 'runs of spaces collapse; leading/trailing whitespace of the search is ignored',
      content: 'x = foo  bar;',
      search: '  foo bar  ',
      spans: [[4, 12]],
    },
    { name: 'tabs collapse like spaces', content: '\tlet\t\tx = 1;', search: 'let x = 1;', spans: [[1, 12]] },
    {
      name: 'starts and ends mid-line across a kept line break',
      content: 'x = f(a,  b,\n  c);',
      search: 'f(a, b,\n c)',
      spans: [[4, 17]],
    },
    {
      name: 'multi-line, indentation collapses to one space',
      content: 'a  b\n  c  d\n',
      search: 'a b\n c d',
      spans: [[0, 11]],
    },
    {
      name: 'all matches, left to right',
      content: 'a  b; a\tb;',
      search: 'a b',
      spans: [
        [0, 4],
        [6, 9],
      ],
    },
  ]);

  it('never joins lines: `a b` does not match `a\\nb`', () => {
    expect(fuzzyFindAll('a\nb', 'a b')).toEqual([]);
  });

  it('never joins lines: a one-line call does not match the same call split over two lines', () => {
    expect(fuzzyFindAll('call(a,\n  b)', 'call(a, b)')).toEqual([]);
  });
});

describe('escape_normalized', () => {
  table('escape_normalized', [
    {
      name: 'literal \\n in the search',
      content: 'line1\nline2\n',
      search: 'line1\\nline2',
      spans: [[0, 11]],
    },
    {
      name: 'character-based: starts and ends mid-line',
      content: 'foo(1);\nbar(2);',
      search: '(1);\\nbar',
      spans: [[3, 11]],
    },
    { name: 'literal \\t in the search', content: 'a\tb = 1;', search: 'a\\tb = 1;', spans: [[0, 8]] },
    { name: 'literal \\r\\n in the search', content: 'x\r\ny', search: 'x\\r\\ny', spans: [[0, 4]] },
  ]);
});

describe('unicode_normalized', () => {
  const singles: Array<[string, string, string]> = [
    ['left single quote', '\u2018', "'"],
    ['right single quote', '\u2019', "'"],
    ['single low-9 quote', '\u201A', "'"],
    ['single high-reversed-9 quote', '\u201B', "'"],
    ['left double quote', '\u201C', '"'],
    ['right double quote', '\u201D', '"'],
    ['double low-9 quote', '\u201E', '"'],
    ['double high-reversed-9 quote', '\u201F', '"'],
    ['en dash', '\u2013', '-'],
    ['figure dash', '\u2012', '-'],
    ['hyphen', '\u2010', '-'],
    ['non-breaking hyphen', '\u2011', '-'],
    ['minus sign', '\u2212', '-'],
    ['em dash', '\u2014', '--'],
    ['ellipsis', '\u2026', '...'],
    ['no-break space', '\u00A0', ' '],
    ['narrow no-break space', '\u202F', ' '],
    ['figure space', '\u2007', ' '],
    ['thin space', '\u2009', ' '],
    ['ideographic space', '\u3000', ' '],
  ];
  table(
    'unicode_normalized',
    singles.map(([label, ch, ascii]) => ({
      name: `${label} (U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase()}) matches ${JSON.stringify(ascii)}`,
      content: `x${ch}y`,
      search: `x${ascii}y`,
      spans: [[0, 3]] as Array<[number, number]>,
    })),
  );

  table('unicode_normalized', [
    { name: 'smart quotes mid-line', content: 'say \u201chi\u201d now', search: '"hi"', spans: [[4, 8]] },
    {
      name: 'offsets after an em dash (which expanded) are original offsets',
      content: 'x \u2014 \u201cy\u201d',
      search: '"y"',
      spans: [[4, 7]],
    },
    {
      name: 'offsets after an ellipsis (which expanded) are original offsets',
      content: 'wait\u2026 \u201cgo\u201d',
      search: '"go"',
      spans: [[6, 10]],
    },
    {
      name: 'em dashes inside the match',
      content: 'a \u2014 b \u2014 c',
      search: 'a -- b -- c',
      spans: [[0, 9]],
    },
    {
      name: 'smart characters in the search, ASCII in the file',
      content: 'say "hi"',
      search: 'say \u201chi\u201d',
      spans: [[0, 8]],
    },
    {
      name: 'line_trimmed on the mapped texts: whole lines',
      content: '  \u201ca\u201d\n  b\u2014c',
      search: '"a"\nb--c',
      spans: [[0, 11]],
    },
    {
      name: 'all matches, left to right',
      content: '\u201ca\u201d and \u201ca\u201d',
      search: '"a"',
      spans: [
        [0, 3],
        [8, 11],
      ],
    },
  ]);

  it('an em dash maps to two hyphens, not one', () => {
    expect(fuzzyFindAll('a\u2014b', 'a-b')).toEqual([]);
  });

  it('a match may not start inside a character that expanded', () => {
    expect(fuzzyFindAll('x\u2014y', '-y')).toEqual([]);
  });

  it('a match may not end inside a character that expanded', () => {
    expect(fuzzyFindAll('x\u2014y', 'x-')).toEqual([]);
    expect(fuzzyFindAll('wait\u2026', 'wait..')).toEqual([]);
  });
});

describe('block_anchor', () => {
  table('block_anchor', [
    {
      name: 'anchors equal, one middle line differs; similarity is the middle score',
      content: 'function f() {\n  const a = 1;\n  return a;\n}',
      search: 'function f() {\n  const a = 2;\n  return a;\n}',
      spans: [[0, 43]],
      similarity: [1 - 1 / 22],
    },
    {
      name: 'a middle line at exactly the line threshold (0.8) matches (inclusive)',
      content: 'start\nabcdX\nend',
      search: 'start\nabcde\nend',
      spans: [[0, 15]],
      similarity: [0.8],
    },
    {
      name: 'blockAnchorSimilarity is inclusive too: a 0.8 middle against 0.8',
      content: 'start\nabcdX\nend',
      search: 'start\nabcde\nend',
      spans: [[0, 15]],
      similarity: [0.8],
      options: { blockAnchorSimilarity: 0.8 },
    },
    {
      name: 'anchors compared after trimming; span starts at the indentation',
      content: '  begin\n    x = 1;\n  end',
      search: 'begin\nx = 2;\nend',
      spans: [[0, 24]],
      similarity: [5 / 6],
    },
    {
      // Middle lines are trimmed, then joined: `value = 10;\n` against `value = 11;\n`, 11/12.
      name: 'a blank middle line stands for a blank file line (whitespace may differ); the middle is compared joined',
      content: 'begin\n  value = 10;\n   \nend',
      search: 'begin\nvalue = 11;\n\nend',
      spans: [[0, 27]],
      similarity: [11 / 12],
    },
    {
      name: 'candidates left to right without overlap',
      content: 'begin\n  x = 1\nend\nbegin\n  x = 2\nend',
      search: 'begin\n  x = 3\nend',
      spans: [
        [0, 17],
        [18, 35],
      ],
      similarity: [0.8, 0.8],
    },
  ]);

  it('blockAnchorSimilarity raises the bar: the 0.8 middle falls through to context_aware', () => {
    expectMatches('context_aware', {
      name: '',
      content: 'start\nabcdX\nend',
      search: 'start\nabcde\nend',
      spans: [[0, 15]],
      similarity: [(1 + 0.8 + 1) / 3],
      options: { blockAnchorSimilarity: 0.81 },
    });
  });

  it('a middle line below the line threshold is refused, however low blockAnchorSimilarity is', () => {
    // abXYZ / abcde: 0.4. The design's rule alone (middle >= 0.6 joined) is not enough either.
    expect(fuzzyFindAll('start\nabXYZ\nend', 'start\nabcde\nend')).toEqual([]);
    expect(fuzzyFindAll('start\nabXYZ\nend', 'start\nabcde\nend', { blockAnchorSimilarity: 0 })).toEqual([]);
    expect(fuzzyFindAll('start\nabXYe\nend', 'start\nabcde\nend')).toEqual([]);
  });

  it('contextLineSimilarity is the line threshold of the middle lines too: at 0.4, a 0.4 line matches', () => {
    expectMatches('block_anchor', {
      name: '',
      content: 'start\nabXYZ\nend',
      search: 'start\nabcde\nend',
      spans: [[0, 15]],
      similarity: [0.4],
      options: { blockAnchorSimilarity: 0.4, contextLineSimilarity: 0.4 },
    });
  });

  it('regression: a middle line unlike the file line it stands for is not rewritten', () => {
    // The joined middles score 0.69 (the design's 0.6 passes) but the last middle line scores 0.45:
    // the patch would have replaced `return compute(input);`, a line the search never quoted.
    const content = 'function f() {\n  validate(input);\n  return compute(input);\n}\n';
    const search = 'function f() {\n  validate(input);\n  return cache.get(key);\n}';
    expect(fuzzyFindAll(content, search)).toEqual([]);
  });

  it("the window has the pattern's line count: an extra middle line is not bridged", () => {
    // No 3-line window has both anchors; the first 3-line window, whose last line is `y = 2` where the
    // search has `end`, used to be taken by context_aware (2 of 3 lines similar) and `y = 2` rewritten.
    expect(fuzzyFindAll('begin\n  x = 1\n  y = 2\nend', 'begin\n  x = 1\nend')).toEqual([]);
  });
});

describe('context_aware', () => {
  table('context_aware', [
    {
      name: 'first line differs (no anchor); every line scores >= 0.8',
      content: 'function fooo() {\n  return 1;\n}',
      search: 'function foo() {\n  return 1;\n}',
      spans: [[0, 31]],
      similarity: [(16 / 17 + 1 + 1) / 3],
    },
    {
      name: 'line score exactly 0.8 counts (inclusive)',
      content: 'abcdX\nfghiX\nklmno',
      search: 'abcde\nfghij\nklmno',
      spans: [[0, 17]],
      similarity: [(0.8 + 0.8 + 1) / 3],
    },
    {
      name: 'blank search lines stand for blank file lines, whatever their whitespace',
      content: 'alpha one\n   \n\t\nbeta twx',
      search: 'alpha one\n\n\nbeta two',
      spans: [[0, 24]],
      similarity: [(1 + 7 / 8) / 2],
    },
    {
      name: 'blank search lines are left out of the mean',
      content: 'alpha one\n\nbeta twx\ngamma thre',
      search: 'alpha one\n\nbeta two\ngamma three',
      spans: [[0, 30]],
      similarity: [(1 + 7 / 8 + 10 / 11) / 3],
    },
    {
      name: 'candidates are taken left to right: the first qualifying window wins over a better later one',
      content: 'aaaaaaaaXa\naaaaaaaaaY\naaaaaaaaab',
      search: 'aaaaaaaaaa\naaaaaaaaab',
      spans: [[0, 21]],
      similarity: [0.9],
    },
    {
      name: 'two matches without overlap',
      content: 'function fooo() {\n  return 1;\n}\nfunction fooo() {\n  return 1;\n}',
      search: 'function foo() {\n  return 1;\n}',
      spans: [
        [0, 31],
        [32, 63],
      ],
    },
  ]);

  it('below 50% of lines counting: no match', () => {
    expect(
      fuzzyFindAll(
        'alpha one\nxxxxxxxx\nyyyyyyyyyyy\nzzzzzzzzzz',
        'alpha one\nbeta two\ngamma three\ndelta four',
      ),
    ).toEqual([]);
  });

  it("half the lines similar is not enough: the design's 50% overall is refined to every line", () => {
    expect(
      fuzzyFindAll(
        'alpha one\nbeta two\nxxxxxxxxxxx\nyyyyyyyyyy',
        'alpha one\nbeta two\ngamma three\ndelta four',
      ),
    ).toEqual([]);
  });

  it('regression: a two-line search with one line similar and the other unrelated matches nothing', () => {
    // 1 of 2 lines at >= 0.8 used to be a match, and the replacement rewrote `deleteAll(records);`.
    const content = 'const total = sum(values);\ndeleteAll(records);\n';
    expect(fuzzyFindAll(content, 'const total = sum(value);\nlogger.info(total);')).toEqual([]);
  });

  it('a blank search line where the file has text is refused (the replacement would drop the text)', () => {
    expect(fuzzyFindAll('alpha one\nsomething\nbeta twx', 'alpha one\n\nbeta two')).toEqual([]);
  });

  it('a search line where the file has a blank line is refused', () => {
    expect(fuzzyFindAll('alpha one\n\nbeta twx', 'alpha one\nsomething\nbeta two')).toEqual([]);
  });

  it('contextLineSimilarity flips the outcome (0.9 inclusive matches, 0.95 does not)', () => {
    const content = 'abcdefghiX\nklmnopqrsX\nuvwxyz1234';
    const search = 'abcdefghij\nklmnopqrst\nuvwxyz1234';
    expectMatches('context_aware', {
      name: '',
      content,
      search,
      spans: [[0, 32]],
      similarity: [(0.9 + 0.9 + 1) / 3],
    });
    expectMatches('context_aware', {
      name: '',
      content,
      search,
      spans: [[0, 32]],
      options: { contextLineSimilarity: 0.9 },
    });
    expect(fuzzyFindAll(content, search, { contextLineSimilarity: 0.95 })).toEqual([]);
  });

  it('a single-line search never matches approximately (needs 2 non-blank lines)', () => {
    expect(fuzzyFindAll('hello world', 'hello worle')).toEqual([]);
    expect(fuzzyFindAll('hello world\n   ', 'hello worle\n   ')).toEqual([]);
  });
});

describe('strategy order', () => {
  it('indent_flexible and trimmed_boundary never appear in results on inputs built for them', () => {
    const inputs: Array<[string, string]> = [
      ['    a\n      b\n    c', 'a\n  b\nc'],
      ['  first  \n\tsecond\n  third  ', 'first\n\tsecond\nthird'],
      ['\t\tx\n\t\ty', 'x\ny'],
    ];
    for (const [content, search] of inputs) {
      const results = fuzzyFindAll(content, search);
      expect(results.length).toBeGreaterThan(0);
      expect(results.every((r) => r.strategy === 'line_trimmed')).toBe(true);
    }
  });

  it('no match at all returns an empty list', () => {
    expect(fuzzyFindAll('alpha\nbeta\n', 'gamma')).toEqual([]);
  });
});
