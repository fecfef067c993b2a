/**
 * The runnable examples under docs/examples/ are what the docs show: each one appears verbatim in a
 * fenced block between `<!-- example: docs/examples/<file> -->` and `<!-- example:end -->` in a docs/*.md,
 * and every file there is shown somewhere. Their *.int.test.ts run them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../', import.meta.url));
const docs = readdirSync(join(root, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => ({ name, text: readFileSync(join(root, 'docs', name), 'utf8') }));
const shown = docs.flatMap(({ name, text }) =>
  [...text.matchAll(/<!-- example: (\S+) -->\n```\w*\n([\s\S]*?)```\n<!-- example:end -->/g)].map((m) => ({
    doc: name,
    file: m[1] as string,
    code: m[2] as string,
  })),
);
const examples = readdirSync(join(root, 'docs/examples')).map((name) => `docs/examples/${name}`);

describe('docs/examples', () => {
  it.each(examples)('%s is shown in the docs', (file) => {
    expect(
      shown.map((s) => s.file),
      `put ${file} in a docs/*.md between <!-- example: ${file} --> and <!-- example:end -->`,
    ).toContain(file);
  });

  it.each(shown)('$doc shows $file verbatim', ({ doc, file, code }) => {
    expect(code, `docs/${doc}: copy ${file} into its example block`).toBe(
      readFileSync(join(root, file), 'utf8'),
    );
  });
});
