import { describe, expect, it } from 'vitest';
import { RUN_TITLE_MAX_CHARS, runTitle } from './title.js';

describe('runTitle', () => {
  it('is the first line that is not blank, trimmed', () => {
    expect(runTitle('Summarise README.md\nthen list the files')).toBe('Summarise README.md');
    expect(runTitle('\n  \n  Fix the build  \nmore')).toBe('Fix the build');
    expect(runTitle('   ')).toBe('');
  });

  it('cuts at the limit in code points, never inside a surrogate pair', () => {
    const long = `${'a'.repeat(RUN_TITLE_MAX_CHARS - 1)}😀😀`;
    const title = runTitle(long);
    expect(Array.from(title)).toHaveLength(RUN_TITLE_MAX_CHARS);
    expect(title.endsWith('😀')).toBe(true);
  });
});
