/**
 * The HTTP `Retry-After` header, read the same way by the SDK (the API's 429
 * and 503) and by the model providers (a model server's 429).
 */

/**
 * How long a `Retry-After` value asks to wait, in ms (rounded up), or
 * `undefined` when it says nothing usable: seconds (fractions allowed) or an
 * HTTP date (one in the past means 0).
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^-?\d+(\.\d+)?$/.test(trimmed)) {
    const seconds = Number(trimmed);
    return seconds >= 0 ? Math.ceil(seconds * 1000) : undefined;
  }
  // An HTTP date starts with the day's name; anything else (Date.parse reads "-5" as a year) is not one.
  if (!/^[A-Za-z]/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
