/** The most characters of a run's {@link runTitle}. */
export const RUN_TITLE_MAX_CHARS = 200;

/**
 * A run's title, as lists show it: the first line of its input that is not
 * blank, trimmed, cut to {@link RUN_TITLE_MAX_CHARS} characters (code points,
 * so a surrogate pair is never split).
 */
export function runTitle(input: string): string {
  const line = input.split('\n').find((candidate) => candidate.trim() !== '') ?? '';
  return Array.from(line.trim()).slice(0, RUN_TITLE_MAX_CHARS).join('');
}
