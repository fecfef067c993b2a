import { describe, expect, it } from 'vitest';
import { wantsJson } from './index.js';

describe('wantsJson', () => {
  it.each([
    [undefined, false],
    ['*/*', false],
    ['text/event-stream', false],
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['text/event-stream, application/json', false],
    ['application/json;q=0.9, */*;q=0.1', true],
  ])('%s → %s', (accept, expected) => {
    expect(wantsJson(accept)).toBe(expected);
  });
});
