import { describe, expect, it } from 'vitest';
import { backoffStrategy, baseDelay, RetryLater, retryDelayMs } from './jobs.js';

describe('retry delays', () => {
  it('doubles the base delay from one attempt to the next', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(2_000, attempt))).toEqual([
      2_000, 4_000, 8_000, 16_000,
    ]);
    expect(retryDelayMs(50, 0)).toBe(50);
  });

  it('reads the base delay of a job in either backoff form', () => {
    expect(baseDelay({ delay: 300 })).toBe(300);
    expect(baseDelay(120)).toBe(120);
    expect(baseDelay(undefined)).toBe(0);
  });

  it('gives BullMQ exactly the delay a RetryLater carries, and the same formula for any other error', () => {
    const job = { opts: { backoff: { delay: 100 } } };
    expect(backoffStrategy(3, 'tether', new RetryLater('x', 1_234), job)).toBe(1_234);
    expect(backoffStrategy(3, 'tether', new Error('bug'), job)).toBe(400);
  });
});
