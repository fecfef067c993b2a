import { describe, expect, it } from 'vitest';
import { createReadTokens } from './read-token.js';

const RUN = 'run_01m8mk437dk0redcd4hsezf61x';
const OTHER = 'run_01m8mk437dk0redcd4hsezf61y';

describe('read tokens', () => {
  const tokens = createReadTokens(Buffer.alloc(32, 7), 3_600);
  const now = 1_800_000_000_000;

  it('open the run they were issued for, as its tenant, until they expire', () => {
    const token = tokens.issue(RUN, 'acme', now);
    expect(tokens.verify(token, RUN, now)).toBe('acme');
    expect(tokens.verify(token, RUN, now + 3_599_000)).toBe('acme');
    expect(tokens.verify(token, RUN, now + 3_600_000)).toBeUndefined();
    expect(tokens.verify(token, OTHER, now)).toBeUndefined();
  });

  it('refuse any change, another secret, and garbage', () => {
    const token = tokens.issue(RUN, 'acme', now);
    const [tenant, expiry, signature] = token.split('.') as [string, string, string];
    expect(tokens.verify(`beta.${expiry}.${signature}`, RUN, now)).toBeUndefined();
    expect(tokens.verify(`${tenant}.${Number(expiry) + 1}.${signature}`, RUN, now)).toBeUndefined();
    expect(tokens.verify(`${tenant}.${expiry}.${signature.slice(1)}A`, RUN, now)).toBeUndefined();
    expect(createReadTokens(Buffer.alloc(32, 8), 3_600).verify(token, RUN, now)).toBeUndefined();
    for (const garbage of ['', 'a.b.c', `${token}.x`, 'acme..x'])
      expect(tokens.verify(garbage, RUN, now)).toBeUndefined();
  });
});
