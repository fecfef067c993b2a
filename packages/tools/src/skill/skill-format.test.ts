import { SKILL_LIMITS } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { checkSkill, parseSkillMd, skillNameProblem, skillPathProblem } from './skill-format.js';

const skillMd = (frontmatter: string, body = '# Steps\n1. Do it.\n') => `---\n${frontmatter}\n---\n${body}`;
const GOOD = skillMd('name: pdf-forms\ndescription: Fill PDF forms with pdftk. Use when a PDF has fields.');

function problems(result: { ok: boolean; problems?: string[] }): string[] {
  return result.ok ? [] : (result.problems ?? []);
}

describe('skillNameProblem', () => {
  it.each([
    ['a', undefined],
    ['pdf-forms', undefined],
    ['x1-2-y3', undefined],
    ['a'.repeat(64), undefined],
    ['', 'is empty'],
    ['a'.repeat(65), 'is 65 characters; at most 64'],
    ['PDF', 'may hold only lowercase letters a-z, digits and hyphens'],
    ['pdf_forms', 'may hold only lowercase letters a-z, digits and hyphens'],
    ['pdf forms', 'may hold only lowercase letters a-z, digits and hyphens'],
    ['né', 'may hold only lowercase letters a-z, digits and hyphens'],
    ['-pdf', 'must not start or end with a hyphen'],
    ['pdf-', 'must not start or end with a hyphen'],
    ['pdf--forms', 'must not hold two hyphens in a row'],
  ])('%j: %s', (name, problem) => {
    expect(skillNameProblem(name)).toBe(problem);
  });
});

describe('skillPathProblem', () => {
  it.each([
    ['SKILL.md', undefined],
    ['scripts/run.sh', undefined],
    ['references/deep/guide.md', undefined],
    ['LICENSE.txt', undefined],
    ['/etc/passwd', 'is absolute; give a path relative to the skill folder'],
    ['../other/SKILL.md', 'leads outside the skill folder'],
    ['scripts/../../x', 'leads outside the skill folder'],
    ['./scripts/run.sh', 'is not in its plain form; write it as "scripts/run.sh"'],
    ['scripts//run.sh', 'is not in its plain form; write it as "scripts/run.sh"'],
    ['scripts/./run.sh', 'is not in its plain form; write it as "scripts/run.sh"'],
    ['scripts/', 'names a directory, not a file'],
    ['.', 'names a directory, not a file'],
    ['', 'is empty'],
    ['scripts\\run.sh', 'holds a backslash; separate names with /'],
    ['a\nb', 'holds a control character'],
    ['a\0b', 'holds a control character'],
    [`${'x'.repeat(256)}.md`, 'has a name of 259 bytes, longer than 255 bytes'],
    ['a/'.repeat(600), `is 1200 characters; at most ${SKILL_LIMITS.pathMaxChars}`],
  ])('%j: %s', (path, problem) => {
    expect(skillPathProblem(path)).toBe(problem);
  });
});

describe('parseSkillMd', () => {
  it('reads the frontmatter and the body, with every optional key', () => {
    const text = skillMd(
      [
        'name: pdf-forms',
        'description: "Fill PDF forms: fields, checkboxes and signatures."',
        'license: Apache-2.0',
        'compatibility: Needs pdftk on the PATH',
        'metadata:',
        '  author: ops',
        '  version: "1.2"',
        'allowed-tools: Bash(pdftk:*) Read',
      ].join('\n'),
      '\n# Filling a form\nRun scripts/fill.sh.\n',
    );
    const parsed = parseSkillMd(text, 'pdf-forms');
    expect(parsed).toEqual({
      ok: true,
      document: {
        frontmatter: {
          name: 'pdf-forms',
          description: 'Fill PDF forms: fields, checkboxes and signatures.',
          license: 'Apache-2.0',
          compatibility: 'Needs pdftk on the PATH',
          metadata: { author: 'ops', version: '1.2' },
          'allowed-tools': 'Bash(pdftk:*) Read',
        },
        body: '\n# Filling a form\nRun scripts/fill.sh.\n',
      },
    });
  });

  it('takes CRLF lines, a BOM, and a block scalar description', () => {
    const text = '\uFEFF---\r\nname: a\r\ndescription: >\r\n  Folded\r\n  text.\r\n---\r\nBody.\r\n';
    const parsed = parseSkillMd(text);
    expect(parsed.ok && parsed.document.frontmatter.description).toBe('Folded text.\n');
  });

  it('refuses unknown keys, naming each, and keeps checking the rest', () => {
    const text = skillMd('name: a\ndescription: d\nauthor: me\nversion: 2');
    expect(problems(parseSkillMd(text))).toEqual([
      'SKILL.md\'s frontmatter key "author" is not allowed; the keys are name, description, license, compatibility, metadata, allowed-tools (put other fields under metadata).',
      'SKILL.md\'s frontmatter key "version" is not allowed; the keys are name, description, license, compatibility, metadata, allowed-tools (put other fields under metadata).',
    ]);
  });

  it('needs name and description, as text that is not blank', () => {
    expect(problems(parseSkillMd(skillMd('license: MIT')))).toEqual([
      "SKILL.md's frontmatter needs name.",
      "SKILL.md's frontmatter needs description.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: 12\ndescription: "  "')))).toEqual([
      "SKILL.md's name must be text (got number 12).",
      "SKILL.md's description is empty.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: [a]\ndescription: {x: 1}')))).toEqual([
      "SKILL.md's name must be text (got a list).",
      "SKILL.md's description must be text (got keys and values).",
    ]);
  });

  it('checks the name against the rules and the folder', () => {
    expect(problems(parseSkillMd(skillMd('name: Bad_Name\ndescription: d')))).toEqual([
      'SKILL.md\'s name "Bad_Name" may hold only lowercase letters a-z, digits and hyphens.',
    ]);
    expect(problems(parseSkillMd(skillMd('name: a--b\ndescription: d')))).toEqual([
      'SKILL.md\'s name "a--b" must not hold two hyphens in a row.',
    ]);
    expect(problems(parseSkillMd(skillMd('name: other\ndescription: d'), 'pdf-forms'))).toEqual([
      'SKILL.md\'s name "other" must be the skill\'s folder name, "pdf-forms".',
    ]);
  });

  it('bounds the description (1,024 characters, no < or >) and the compatibility (500)', () => {
    const at = 'd'.repeat(SKILL_LIMITS.descriptionMaxChars);
    expect(parseSkillMd(skillMd(`name: a\ndescription: ${at}`)).ok).toBe(true);
    expect(problems(parseSkillMd(skillMd(`name: a\ndescription: ${at}d`)))).toEqual([
      "SKILL.md's description is 1025 characters; at most 1024.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: a\ndescription: "Use <b> tags"')))).toEqual([
      "SKILL.md's description must not hold < or >.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: a\ndescription: "a -> b"')))).toEqual([
      "SKILL.md's description must not hold < or >.",
    ]);
    const compatibility = 'c'.repeat(SKILL_LIMITS.compatibilityMaxChars + 1);
    expect(
      problems(parseSkillMd(skillMd(`name: a\ndescription: d\ncompatibility: ${compatibility}`))),
    ).toEqual(["SKILL.md's compatibility is 501 characters; at most 500."]);
  });

  it('wants metadata as text values and allowed-tools and license as text', () => {
    expect(
      problems(parseSkillMd(skillMd('name: a\ndescription: d\nmetadata:\n  version: 1.2\n  tags: [x]'))),
    ).toEqual([
      "SKILL.md's metadata.version must be text (got number 1.2); quote it.",
      "SKILL.md's metadata.tags must be text (got a list); quote it.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: a\ndescription: d\nmetadata: plain')))).toEqual([
      'SKILL.md\'s metadata must be keys and text values (got string "plain").',
    ]);
    expect(
      problems(parseSkillMd(skillMd('name: a\ndescription: d\nallowed-tools: [Bash]\nlicense: 2'))),
    ).toEqual([
      "SKILL.md's license must be text (got number 2).",
      "SKILL.md's allowed-tools must be text (got a list).",
    ]);
  });

  it('needs the fences, valid YAML that is a mapping, no aliases, and a body', () => {
    expect(problems(parseSkillMd('# No frontmatter\n'))).toEqual([
      'SKILL.md must start with YAML frontmatter: a first line ---, the keys (name, description, …), then a line ---.',
    ]);
    expect(problems(parseSkillMd('---\nname: a\ndescription: d\n'))).toEqual([
      "SKILL.md's frontmatter has no closing --- line.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: a\ndescription: [unclosed')))[0]).toMatch(
      /^SKILL\.md's frontmatter is not valid YAML: /,
    );
    expect(problems(parseSkillMd(skillMd('name: a\nname: b\ndescription: d')))[0]).toMatch(
      /^SKILL\.md's frontmatter is not valid YAML: Map keys must be unique/,
    );
    expect(problems(parseSkillMd(skillMd('- a\n- b')))).toEqual([
      "SKILL.md's frontmatter must be YAML keys and values (name: …, description: …).",
    ]);
    expect(problems(parseSkillMd(skillMd('name: &n a\ndescription: *n')))).toEqual([
      "SKILL.md's frontmatter uses YAML aliases (*name); write the values out.",
    ]);
    expect(problems(parseSkillMd(skillMd('name: a\ndescription: d', '\n  \n')))).toEqual([
      'SKILL.md has no body: after the frontmatter, write the instructions the skill gives.',
    ]);
  });

  it('holds at most 100,000 characters', () => {
    const head = skillMd('name: a\ndescription: d', '');
    const at = head + 'x'.repeat(SKILL_LIMITS.skillMdMaxChars - head.length);
    expect(parseSkillMd(at).ok).toBe(true);
    expect(problems(parseSkillMd(`${at}x`))).toEqual(['SKILL.md is 100001 characters; at most 100000.']);
  });
});

describe('checkSkill', () => {
  it('accepts a skill with files in its folders and at its root, and counts its bytes', () => {
    const files = {
      'SKILL.md': GOOD,
      'scripts/fill.sh': '#!/bin/sh\necho é\n',
      'references/fields.md': 'Fields.',
      'LICENSE.txt': 'MIT',
    };
    const checked = checkSkill('pdf-forms', files);
    expect(checked.ok).toBe(true);
    const bytes = Object.values(files).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    expect(checked.ok && checked.bytes).toBe(bytes);
    expect(checked.ok && checked.document.frontmatter.name).toBe('pdf-forms');
  });

  it('needs SKILL.md', () => {
    expect(problems(checkSkill('pdf-forms', { 'skill.md': GOOD }))).toEqual([
      'The skill has no SKILL.md; every skill needs one (YAML frontmatter, then the instructions).',
    ]);
  });

  it('reports every problem at once: name, paths, sizes, clashes, count, and SKILL.md', () => {
    const big = 'x'.repeat(SKILL_LIMITS.fileMaxBytes + 1);
    const result = checkSkill('pdf-forms', {
      'SKILL.md': skillMd('name: pdf-forms\ndescription: d\nextra: 1'),
      '../escape.sh': 'x',
      'assets/big.bin': big,
      scripts: 'a file',
      'scripts/run.sh': 'x',
    });
    expect(problems(result)).toEqual([
      'The path "../escape.sh" leads outside the skill folder.',
      "assets/big.bin is 1048577 bytes; a skill's file holds at most 1048576 bytes (1 MiB).",
      '"scripts" is a file, so "scripts/run.sh" cannot be inside it.',
      'SKILL.md\'s frontmatter key "extra" is not allowed; the keys are name, description, license, compatibility, metadata, allowed-tools (put other fields under metadata).',
    ]);
    const many = Object.fromEntries(
      Array.from({ length: SKILL_LIMITS.filesMax }, (_, i) => [`references/${i}.md`, 'x']),
    );
    expect(problems(checkSkill('pdf-forms', { 'SKILL.md': GOOD, ...many }))).toEqual([
      'The skill has 101 files; at most 100, SKILL.md included.',
    ]);
  });

  it('counts a file of exactly 1 MiB (UTF-8 bytes, not characters) as fitting', () => {
    const at = 'x'.repeat(SKILL_LIMITS.fileMaxBytes);
    expect(checkSkill('pdf-forms', { 'SKILL.md': GOOD, 'assets/a.txt': at }).ok).toBe(true);
    const wide = 'é'.repeat(SKILL_LIMITS.fileMaxBytes / 2 + 1);
    expect(problems(checkSkill('pdf-forms', { 'SKILL.md': GOOD, 'assets/a.txt': wide }))).toEqual([
      "assets/a.txt is 1048578 bytes; a skill's file holds at most 1048576 bytes (1 MiB).",
    ]);
  });

  it('refuses a bad folder name without also blaming SKILL.md for not matching it', () => {
    expect(problems(checkSkill('Bad', { 'SKILL.md': skillMd('name: bad\ndescription: d') }))).toEqual([
      'The skill name "Bad" may hold only lowercase letters a-z, digits and hyphens.',
    ]);
  });
});
