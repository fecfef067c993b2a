import { describe, expect, it } from 'vitest';
import { checkSubmission } from './submission.js';

/** Why checkSubmission refuses a run with one file at `path`, or undefined. */
function filePathProblem(path: string): string | undefined {
  const replay = { provider: 'replay' as const, script: [{ content: 'ok' }] };
  try {
    checkSubmission(
      { input: 'x', model: replay, files: { [path]: 'x' } },
      { profiles: [], defaultProfile: undefined, allowReplay: true },
    );
    return undefined;
  } catch (error) {
    expect(error).toMatchObject({ code: 'ERR_FILES_INVALID' });
    return (error as Error).message;
  }
}

describe('submitted file paths', () => {
  it.each([
    'a.txt',
    'src/index.ts',
    './a.txt',
    'a/../b.txt',
    '.hidden',
    'a'.repeat(255),
    `d/${'é'.repeat(127)}`,
  ])('accepts %s', (path) => {
    expect(filePathProblem(path)).toBeUndefined();
  });
  it.each([
    '/etc/passwd',
    '../x',
    'a/../../x',
    '..',
    '.',
    'dir/',
    'C:\\x',
    'a\0b',
    '..\\x',
    'a'.repeat(256),
    `d/${'é'.repeat(128)}/x`,
  ])('refuses %j', (path) => {
    expect(filePathProblem(path)).toBeDefined();
  });
});

describe('checkSubmission', () => {
  const config = { profiles: [], defaultProfile: undefined, allowReplay: true };
  const replay = { provider: 'replay' as const, script: [{ content: 'ok' }] };

  it('names the available toolsets when one is unknown', () => {
    expect(() => checkSubmission({ input: 'x', model: replay, toolsets: ['browser'] }, config)).toThrow(
      /browser; available: base, planning, interaction, memory, skill, crew/,
    );
    expect(() =>
      checkSubmission({ input: 'x', model: replay, toolsets: ['base', 'crew', 'memory', 'skill'] }, config),
    ).not.toThrow();
  });

  it('refuses a run without a model when the server has no default profile', () => {
    expect(() => checkSubmission({ input: 'x' }, config)).toThrow(
      expect.objectContaining({ statusCode: 400 }),
    );
  });
});
