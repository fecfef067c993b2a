import { describe, expect, it } from 'vitest';
import { abortableSleep, backoffDelay, parseRetryAfterHeaders } from './retry.js';

const headers = (values: Record<string, string>) => new Headers(values);

describe('parseRetryAfter', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  it('reads retry-after-ms first, then Retry-After seconds (fractions too) or an HTTP date', () => {
    expect(parseRetryAfterHeaders(headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now)).toBe(250);
    expect(parseRetryAfterHeaders(headers({ 'retry-after': '2' }), now)).toBe(2_000);
    expect(parseRetryAfterHeaders(headers({ 'retry-after': '0.25' }), now)).toBe(250);
    expect(parseRetryAfterHeaders(headers({ 'retry-after': '0' }), now)).toBe(0);
    expect(parseRetryAfterHeaders(headers({ 'retry-after': 'Tue, 01 Jan 2030 00:00:03 GMT' }), now)).toBe(
      3_000,
    );
  });

  it('treats a date in the past as no wait, and nonsense or no header as not said', () => {
    expect(parseRetryAfterHeaders(headers({ 'retry-after': 'Mon, 31 Dec 2029 23:59:00 GMT' }), now)).toBe(0);
    expect(parseRetryAfterHeaders(headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfterHeaders(headers({ 'retry-after': '-5' }), now)).toBeUndefined();
    expect(parseRetryAfterHeaders(headers({ 'retry-after-ms': 'x', 'retry-after': '1' }), now)).toBe(1_000);
    expect(parseRetryAfterHeaders(headers({}), now)).toBeUndefined();
    expect(parseRetryAfterHeaders(undefined, now)).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  const options = { baseDelayMs: 100, maxDelayMs: 1_000 };

  it('doubles per attempt with half of it jittered, and never passes the cap', () => {
    expect(backoffDelay(1, { ...options, random: () => 0 })).toBe(50);
    expect(backoffDelay(1, { ...options, random: () => 0.999999 })).toBe(100);
    expect(backoffDelay(3, { ...options, random: () => 0 })).toBe(200);
    expect(backoffDelay(3, { ...options, random: () => 0.5 })).toBe(300);
    expect(backoffDelay(10, { ...options, random: () => 0.999999 })).toBe(1_000);
    expect(backoffDelay(10, { ...options, random: () => 0 })).toBe(500);
  });
});

describe('abortableSleep', () => {
  it('rejects with the given error as soon as the signal aborts', async () => {
    const controller = new AbortController();
    const sleeping = abortableSleep(60_000, controller.signal, () => new Error('stopped'));
    controller.abort();
    await expect(sleeping).rejects.toThrow('stopped');
  });

  it('rejects at once when the signal is already aborted, and resolves otherwise', async () => {
    await expect(abortableSleep(60_000, AbortSignal.abort(), () => new Error('stopped'))).rejects.toThrow(
      'stopped',
    );
    await expect(
      abortableSleep(1, new AbortController().signal, () => new Error('no')),
    ).resolves.toBeUndefined();
  });
});
