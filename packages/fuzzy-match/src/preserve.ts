import { UNICODE_MAP } from './views.js';

/**
 * A text as the comparison saw it: one token per view character, each knowing
 * the original character it came from. `\r\n` is one `\n` token; with
 * `trimLines`, each line's leading and trailing whitespace is left out.
 */
interface Tokens {
  chars: string;
  origin: number[];
  originEnd: number[];
  /** Whether the token is the first (or only) one of its original character. */
  first: boolean[];
}

function tokenize(text: string, trimLines: boolean): Tokens {
  const chars: string[] = [];
  const origin: number[] = [];
  const originEnd: number[] = [];
  const first: boolean[] = [];
  let lineStart = 0;
  while (lineStart <= text.length) {
    let breakAt = text.indexOf('\n', lineStart);
    if (breakAt === -1) breakAt = text.length;
    let lineEnd = breakAt;
    if (lineEnd > lineStart && text.charCodeAt(lineEnd - 1) === 13 && breakAt < text.length) lineEnd--;
    let from = lineStart;
    let to = lineEnd;
    if (trimLines) {
      const line = text.slice(lineStart, lineEnd);
      from = lineStart + (line.length - line.trimStart().length);
      to = Math.max(from, lineEnd - (line.length - line.trimEnd().length));
    }
    for (let i = from; i < to; i++) {
      const mapped = UNICODE_MAP.get(text.charCodeAt(i)) ?? (text[i] as string);
      for (let k = 0; k < mapped.length; k++) {
        chars.push(mapped[k] as string);
        origin.push(i);
        originEnd.push(i + 1);
        first.push(k === 0);
      }
    }
    if (breakAt >= text.length) break;
    chars.push('\n');
    origin.push(lineEnd);
    originEnd.push(breakAt + 1);
    first.push(true);
    lineStart = breakAt + 1;
  }
  return { chars: chars.join(''), origin, originEnd, first };
}

/**
 * The replacement for a `unicode_normalized` match that keeps the file's own
 * characters wherever `newText` keeps `oldText` unchanged: the common prefix
 * and suffix of `oldText` and `newText` are taken from `matched` (the file's
 * text), and only the part in between comes from `newText`. So an edit of one
 * word does not flatten the line's em dashes or smart quotes.
 *
 * Returns the three parts (only `middle` is the model's text), or undefined
 * when `oldText` and `matched` do not align token for token.
 */
export function preserveOriginal(
  oldText: string,
  newText: string,
  matched: string,
  trimLines: boolean,
): { head: string; middle: string; tail: string } | undefined {
  const a = tokenize(oldText, trimLines);
  const m = tokenize(matched, trimLines);
  if (a.chars !== m.chars) return undefined;
  const length = a.origin.length;
  const limit = Math.min(oldText.length, newText.length);
  let prefix = 0;
  while (prefix < limit && oldText.charCodeAt(prefix) === newText.charCodeAt(prefix)) prefix++;
  let suffix = 0;
  while (
    suffix < limit - prefix &&
    oldText.charCodeAt(oldText.length - 1 - suffix) === newText.charCodeAt(newText.length - 1 - suffix)
  ) {
    suffix++;
  }
  const startsChar = (k: number): boolean => k >= length || (a.first[k] === true && m.first[k] === true);
  // Tokens wholly inside the common prefix, backed off to a whole character on both sides.
  let head = 0;
  while (head < length && (a.originEnd[head] as number) <= prefix) head++;
  while (head > 0 && !startsChar(head)) head--;
  // The first token wholly inside the common suffix, moved on to a whole character.
  const suffixStart = oldText.length - suffix;
  let tail = head;
  while (tail < length && (a.origin[tail] as number) < suffixStart) tail++;
  while (tail < length && !startsChar(tail)) tail++;
  const oldHead = head > 0 ? (a.originEnd[head - 1] as number) : 0;
  const matchedHead = head > 0 ? (m.originEnd[head - 1] as number) : 0;
  const oldTail = tail < length ? (a.origin[tail] as number) : oldText.length;
  const matchedTail = tail < length ? (m.origin[tail] as number) : matched.length;
  return {
    head: matched.slice(0, matchedHead),
    middle: newText.slice(oldHead, newText.length - (oldText.length - oldTail)),
    tail: matched.slice(matchedTail),
  };
}
