/**
 * Event ids are Redis stream ids, `<ms>-<seq>`: two unsigned 64-bit integers.
 * They only grow within a run's log, and compare as numbers: milliseconds
 * first, then the sequence (never as strings: `9-0` < `10-0`).
 */
const ID = /^([0-9]{1,20})-([0-9]{1,20})$/;

/** The cursor that means "from the start of the log". */
export const LOG_START = '0';

/** A cursor as the API accepts it: an event id, or `0` for the whole log. */
export const CURSOR_PATTERN = '^(0|[0-9]{1,20}-[0-9]{1,20})$';

function parts(id: string): [string, string] {
  if (id === LOG_START) return ['0', '0'];
  const match = ID.exec(id);
  if (!match) throw new RangeError(`not an event id: ${JSON.stringify(id)}`);
  return [digits(match[1] as string), digits(match[2] as string)];
}

/** Digits without leading zeros ('0' for zero), so length then text order is numeric order. */
function digits(text: string): string {
  const trimmed = text.replace(/^0+/, '');
  return trimmed === '' ? '0' : trimmed;
}

function compareDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The largest part of a stream id, 2^64 - 1. */
export const MAX_ID_PART = '18446744073709551615';

/**
 * Why `cursor` (`0`, or `<ms>-<seq>` of up to 20 digits each, as the schema
 * lets through) is not an id Redis can hold, or undefined when it is one. Redis
 * refuses a part above 2^64 - 1 in `XRANGE`, so the API refuses it first.
 */
export function cursorProblem(cursor: string): string | undefined {
  let ms: string;
  let seq: string;
  try {
    [ms, seq] = parts(cursor);
  } catch {
    return 'is not an event id (<ms>-<seq>, or 0 for the start)';
  }
  if (compareDigits(ms, MAX_ID_PART) > 0 || compareDigits(seq, MAX_ID_PART) > 0) {
    return `is out of range: both parts of an event id are at most ${MAX_ID_PART}`;
  }
  return undefined;
}

/** Negative when `a` comes before `b`, 0 when equal, positive after. */
export function compareEventIds(a: string, b: string): number {
  const [aMs, aSeq] = parts(a);
  const [bMs, bSeq] = parts(b);
  return compareDigits(aMs, bMs) || compareDigits(aSeq, bSeq);
}
