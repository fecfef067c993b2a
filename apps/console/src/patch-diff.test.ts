import { describe, expect, it } from 'vitest';
import { patchDiff } from './patch-diff.js';

const args = JSON.stringify({ path: 'notes.md', old_string: 'beta\n', new_string: 'gamma\ndelta\n' });

describe('patchDiff', () => {
  it("takes the tool result's unified diff, line by line, after its headline", () => {
    const content = [
      'Patched "notes.md": 1 replacement (strategy: exact).',
      '--- a/notes.md',
      '+++ b/notes.md',
      '@@ -1,2 +1,3 @@',
      ' alpha',
      '-beta',
      '+gamma',
      '+delta',
      '\\ No newline at end of file',
      '[... 4 more diff lines not shown]',
    ].join('\n');
    expect(patchDiff(args, { ok: true, content })).toEqual({
      from: 'result',
      path: 'notes.md',
      lines: [
        { kind: 'file', text: '--- a/notes.md' },
        { kind: 'file', text: '+++ b/notes.md' },
        { kind: 'hunk', text: '@@ -1,2 +1,3 @@' },
        { kind: 'context', text: 'alpha' },
        { kind: 'remove', text: 'beta' },
        { kind: 'add', text: 'gamma' },
        { kind: 'add', text: 'delta' },
        { kind: 'note', text: '\\ No newline at end of file' },
        { kind: 'note', text: '[... 4 more diff lines not shown]' },
      ],
    });
  });

  it('makes the diff from the arguments while the call runs, and when the result has none', () => {
    const fromArgs = {
      from: 'arguments',
      path: 'notes.md',
      lines: [
        { kind: 'file', text: '--- a/notes.md' },
        { kind: 'file', text: '+++ b/notes.md' },
        { kind: 'remove', text: 'beta' },
        { kind: 'add', text: 'gamma' },
        { kind: 'add', text: 'delta' },
      ],
    };
    expect(patchDiff(args)).toEqual(fromArgs);
    expect(patchDiff(args, { ok: false, content: 'No match for old_string in "notes.md"' })).toEqual(
      fromArgs,
    );
    expect(patchDiff(args, { ok: true, content: 'Already applied: "notes.md" has new_string' })).toEqual(
      fromArgs,
    );
  });

  it('has no diff for arguments that are not a patch', () => {
    expect(patchDiff('not json')).toBeUndefined();
    expect(patchDiff(JSON.stringify({ path: 'a.txt' }))).toBeUndefined();
  });

  it('shows an insertion as added lines only', () => {
    const insert = JSON.stringify({ path: 'a.txt', old_string: '', new_string: 'one\r\ntwo' });
    expect(patchDiff(insert)?.lines.filter((line) => line.kind !== 'file')).toEqual([
      { kind: 'add', text: 'one' },
      { kind: 'add', text: 'two' },
    ]);
  });
});
