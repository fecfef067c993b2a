import { describe, expect, it } from 'vitest';
import { parseMetadataFilter, startedSince } from './runs-filter.js';

describe("the runs list's filters", () => {
  it('reads key=value pairs separated by spaces or commas, and says what is wrong', () => {
    expect(parseMetadataFilter('')).toEqual({ pairs: {} });
    expect(parseMetadataFilter(' team=infra, env=prod ')).toEqual({ pairs: { team: 'infra', env: 'prod' } });
    expect(parseMetadataFilter('url=a=b')).toEqual({ pairs: { url: 'a=b' } });
    expect(parseMetadataFilter('empty=')).toEqual({ pairs: { empty: '' } });
    expect(parseMetadataFilter('team')).toEqual({ problem: '“team” is not key=value.' });
    expect(parseMetadataFilter('=x')).toEqual({ problem: '“=x” is not key=value.' });
    expect(parseMetadataFilter('a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9')).toEqual({
      problem: 'At most 8 pairs.',
    });
  });

  it('keeps the runs started since the cutoff, and says when older pages cannot match', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    const runs = [
      { id: 'a', createdAt: '2026-01-01T11:30:00Z' },
      { id: 'b', createdAt: '2026-01-01T10:30:00Z' },
    ];
    expect(startedSince(runs, 0, now)).toEqual({ runs, olderMayMatch: true });
    expect(startedSince(runs, 3_600_000, now)).toEqual({ runs: [runs[0]], olderMayMatch: false });
    expect(startedSince(runs, 86_400_000, now)).toEqual({ runs, olderMayMatch: true });
  });
});
