import { describe, expect, it } from 'vitest';
import { usageBars } from './usage-chart.js';

describe('the usage chart', () => {
  it('gives each day a slot, the largest day the full height, a day of 0 none', () => {
    const bars = usageBars(
      [
        { key: 'a', value: 50 },
        { key: 'b', value: 0 },
        { key: 'c', value: 100 },
        { key: 'd', value: 25 },
      ],
      400,
      100,
    );
    expect(bars.map((bar) => [bar.key, bar.x, bar.width, bar.y, bar.height])).toEqual([
      ['a', 1, 98, 50, 50],
      ['b', 101, 98, 100, 0],
      ['c', 201, 98, 0, 100],
      ['d', 301, 98, 75, 25],
    ]);
  });

  it('draws nothing tall when every day is 0, and nothing at all without days', () => {
    expect(usageBars([{ key: 'a', value: 0 }], 100, 50)).toEqual([
      { key: 'a', value: 0, x: 1, y: 50, width: 98, height: 0 },
    ]);
    expect(usageBars([], 100, 50)).toEqual([]);
  });
});
