import { describe, expect, it } from 'vitest';
import { REQUEST_ID_MAX_LENGTH, requestIdOf } from './request-id.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const idOf = (value?: string | string[]) => requestIdOf({ headers: { 'x-request-id': value } });

describe('requestIdOf', () => {
  it.each(['abc-123', 'a', 'x'.repeat(REQUEST_ID_MAX_LENGTH), '!~', '0f8fad5b-d9cb-469f-a165-70867728950e'])(
    'keeps the client id %s',
    (id) => {
      expect(idOf(id)).toBe(id);
    },
  );

  it.each([
    ['too long', 'x'.repeat(REQUEST_ID_MAX_LENGTH + 1)],
    ['empty', ''],
    ['a space', 'a b'],
    ['a newline (a forged log line)', 'a\nlevel=error'],
    ['a tab', 'a\tb'],
    ['DEL', 'a\x7f'],
    ['non-ASCII', 'café'],
    ['a NUL', 'a\0'],
  ])('replaces an id with %s by a random UUID', (_, id) => {
    expect(idOf(id)).toMatch(UUID);
  });

  it('generates a different UUID for each request without an id, or with several', () => {
    const first = idOf();
    expect(first).toMatch(UUID);
    expect(idOf()).not.toBe(first);
    expect(idOf(['a', 'b'])).toMatch(UUID);
  });
});
