import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type EvalResult, percent, points, readResult } from './eval-command.js';
import { compareMetrics, summarise } from './eval-metrics.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-eval-result-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const result: EvalResult = {
  kind: 'tether.eval',
  version: 1,
  at: '2026-11-30T19:00:00.000Z',
  model: null,
  tasks: [],
  metrics: summarise([]),
};

describe('readResult', () => {
  it('reads back what --out writes', async () => {
    const path = join(dir, 'ok.json');
    await writeFile(path, JSON.stringify(result));
    expect(await readResult(path)).toEqual(result);
  });

  it('reads an older result, from before the long and structured figures, which then compare as null', async () => {
    const { long: _long, structured: _structured, ...metrics } = result.metrics;
    const path = join(dir, 'old.json');
    await writeFile(path, JSON.stringify({ ...result, metrics }));
    const old = await readResult(path);
    expect(old.metrics).toEqual(metrics);
    const rows = compareMetrics(result.metrics, old.metrics);
    expect(rows.find((row) => row.key === 'structured.valid')).toMatchObject({ previous: null, delta: null });
  });

  it.each([
    ['{', 'not valid JSON'],
    ['[]', 'not a tether eval result (version 1)'],
    [JSON.stringify({ ...result, version: 2 }), 'not a tether eval result (version 1)'],
    [
      JSON.stringify({ ...result, metrics: { ...result.metrics, clarify: { ambiguous: { count: 1 } } } }),
      'metrics.clarify.ambiguous is missing or not a ratio',
    ],
    [
      JSON.stringify({ ...result, metrics: { ...result.metrics, patchShare: undefined } }),
      'metrics.patchShare is missing or not a ratio',
    ],
    [
      JSON.stringify({ ...result, metrics: { ...result.metrics, long: { completed: 'all' } } }),
      'metrics.long.completed is missing or not a ratio',
    ],
  ])('refuses %s', async (text, message) => {
    const path = join(dir, 'bad.json');
    await writeFile(path, text);
    await expect(readResult(path)).rejects.toThrow(`--compare ${path}: ${message}`);
  });
});

describe('percent and points', () => {
  it('round to whole percents and points, with a sign, and a dash for nothing', () => {
    expect([percent(2 / 3), percent(0), percent(null)]).toEqual(['67%', '0%', '–']);
    expect([points(1 / 3), points(-1), points(0.001), points(null)]).toEqual([
      '+33 pp',
      '-100 pp',
      '±0 pp',
      '–',
    ]);
  });
});
