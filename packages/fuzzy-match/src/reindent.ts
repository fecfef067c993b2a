import { leadingWhitespace } from './lines.js';

/**
 * Re-indents `text` by the difference between `from` (the indentation of the
 * search's first non-blank line) and `to` (the indentation of the line it
 * matched), applied to every non-blank line, written with the file's own
 * indent character: when `to` (or, when `to` is empty, the file) indents with
 * tabs, tabs stay tabs.
 *
 * Widths are counted in columns. Spaces written by the model count one column
 * each; a tab counts `unit` columns, where `unit` is the model's own indent
 * step (the common divisor of its space indentations, 4 when it has none), so two-space and four-space models both map one step to one tab.
 */
export function reindent(
  text: string,
  from: string,
  to: string,
  fileUsesTabs: boolean,
  unit: number,
): string {
  if (from === to) return text;
  const tabs = to.includes('\t') || (to === '' && fileUsesTabs);
  const delta = columns(to, unit) - columns(from, unit);
  return text
    .split('\n')
    .map((line) => {
      if (line.trim() === '') return line;
      const indent = leadingWhitespace(line);
      const width = Math.max(0, columns(indent, unit) + delta);
      const rendered = tabs
        ? '\t'.repeat(Math.floor(width / unit)) + ' '.repeat(width % unit)
        : ' '.repeat(width);
      return rendered + line.slice(indent.length);
    })
    .join('\n');
}

function columns(indent: string, unit: number): number {
  let width = 0;
  for (let i = 0; i < indent.length; i++) width += indent.charCodeAt(i) === 9 ? unit : 1;
  return width;
}

/** The model's indent step: the greatest common divisor of the texts' space indentations (2 to 8), else 4. */
export function indentUnit(...texts: string[]): number {
  let unit = 0;
  for (const text of texts) {
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const indent = leadingWhitespace(line);
      if (indent.length > 0 && !indent.includes('\t')) unit = gcd(unit, indent.length);
    }
  }
  return unit >= 2 && unit <= 8 ? unit : 4;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Whether most indented lines of `lines` start with a tab. */
export function usesTabs(lines: readonly string[]): boolean {
  let tabs = 0;
  let spaces = 0;
  for (const line of lines) {
    const c = line.charCodeAt(0);
    if (c === 9) tabs++;
    else if (c === 32) spaces++;
  }
  return tabs > spaces;
}
