import { readFile } from 'node:fs/promises';
import { parseRetryAfter } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { EXIT } from './cli/exit-codes.js';
import { CLIENT_ERROR_CODES } from './errors.js';

const docs = await readFile(new URL('../../../docs/client.md', import.meta.url), 'utf8');

/** The first column of the markdown table that follows `heading`. */
function tableCodes(afterText: string): string[] {
  const start = docs.indexOf(afterText);
  expect(start, `docs/client.md has "${afterText}"`).toBeGreaterThan(-1);
  const rows = docs.slice(start).split('\n\n')[1]?.split('\n') ?? [];
  return rows.slice(2).map((row) => row.split('|')[1]?.trim().replaceAll('`', '') ?? '');
}

describe('docs/client.md', () => {
  it('lists exactly the client error codes', () => {
    const documented = tableCodes('The codes the client raises itself');
    expect(documented.sort()).toEqual(Object.values(CLIENT_ERROR_CODES).sort());
  });

  it('lists exactly the exit codes', () => {
    const documented = tableCodes('### Exit codes');
    expect(documented.map(Number).sort((a, b) => a - b)).toEqual(Object.values(EXIT).sort((a, b) => a - b));
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates', () => {
    expect(parseRetryAfter('7')).toBe(7_000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:10 GMT', 4_000)).toBe(6_000);
    expect(parseRetryAfter('Thu, 01 Jan 1970 00:00:01 GMT', 4_000)).toBe(0);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
