// pnpm bench:fuzzy — one JSON line per scenario: the median of several runs, in ms,
// of fuzzyFindAll / fuzzyReplace on generated source files. Needs `pnpm build`.
//
// With BENCH_HERMES=<a checkout of NousResearch/hermes-agent>, each scenario also times Hermes's
// matcher (its tools/fuzzy_match.py `fuzzy_find_and_replace`, through bench/lib/hermes-fuzzy.py and
// python3) on the same input, and a scenario an approximate strategy wins passes only when Tether's
// is at least 20 times faster.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fuzzyFindAll, fuzzyReplace } from '../packages/fuzzy-match/dist/index.js';
import { makeLines, mutate, rng } from './lib/source-gen.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 9);
const HERMES = process.env.BENCH_HERMES;
const HERMES_DRIVER = fileURLToPath(new URL('./lib/hermes-fuzzy.py', import.meta.url));
/** How much faster than Hermes's matcher an approximate strategy must be. */
const HERMES_FACTOR = 20;
const APPROXIMATE = new Set(['block_anchor', 'context_aware']);

/** Hermes's matcher on the same input (median of 3 runs), when BENCH_HERMES names a checkout. */
function hermes(content, search) {
  if (!HERMES) return undefined;
  const out = execFileSync('python3', [HERMES_DRIVER, HERMES], {
    input: JSON.stringify({ content, search, runs: 3 }),
    maxBuffer: 1 << 20,
  });
  return JSON.parse(out.toString());
}
const WARMUP = 2;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function measure(fn) {
  let last;
  for (let i = 0; i < WARMUP; i++) last = fn();
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    last = fn();
    times.push(performance.now() - start);
  }
  return { times, last };
}

function scenario(name, { content, search, targetMs, expect, run }) {
  const { times, last } = measure(run);
  const { strategy, count } = last;
  if (strategy !== expect.strategy || (expect.count !== undefined && count !== expect.count)) {
    throw new Error(
      `${name}: expected ${expect.strategy} x${expect.count ?? '?'}, got ${strategy} x${count}: the scenario no longer measures what it says`,
    );
  }
  const medianMs = Number(median(times).toFixed(3));
  const theirs = search === undefined ? undefined : hermes(content, search);
  const speedup = theirs && Number((theirs.median_ms / medianMs).toFixed(1));
  const pass =
    medianMs <= targetMs && (speedup === undefined || !APPROXIMATE.has(strategy) || speedup >= HERMES_FACTOR);
  console.log(
    JSON.stringify({
      bench: 'fuzzy-match',
      scenario: name,
      lines: content.split('\n').length,
      bytes: Buffer.byteLength(content),
      strategy,
      matches: count,
      runs: RUNS,
      median_ms: medianMs,
      min_ms: Number(Math.min(...times).toFixed(3)),
      max_ms: Number(Math.max(...times).toFixed(3)),
      target_ms: targetMs,
      ...(theirs
        ? {
            hermes_ms: Number(theirs.median_ms.toFixed(3)),
            hermes_strategy: theirs.strategy,
            hermes_matches: theirs.matches,
            speedup,
          }
        : {}),
      pass,
    }),
  );
  return pass;
}

const find = (content, search) => () => {
  const found = fuzzyFindAll(content, search);
  return { strategy: found[0]?.strategy ?? 'none', count: found.length };
};

const results = [];

// The 10,000-line (~340 KB) source file of scenarios 1 to 3.
const baseLines = makeLines(10_000, 1);
const base = baseLines.join('\n');

// 1. exact hit: three lines from the middle of the file, as they are.
results.push(
  scenario('1-exact-hit', {
    content: base,
    targetMs: 1,
    expect: { strategy: 'exact', count: 1 },
    search: baseLines.slice(5000, 5003).join('\n'),
    run: find(base, baseLines.slice(5000, 5003).join('\n')),
  }),
);

// 2. whitespace_normalized hit: part of a line, its spaces doubled.
{
  const line = baseLines.findIndex((l, i) => i > 7000 && l.includes('= compute('));
  const text = baseLines[line].trim();
  const search = text.slice(0, text.length - 1).replace(/ /g, '  ');
  results.push(
    scenario('2-whitespace-normalized-hit', {
      content: base,
      targetMs: 10,
      expect: { strategy: 'whitespace_normalized', count: 1 },
      search,
      run: find(base, search),
    }),
  );
}

// 3. A 40-line pattern that matches nowhere: the whole chain runs.
{
  const search = makeLines(40, 99).join('\n');
  results.push(
    scenario('3-no-match-40-lines', {
      content: base,
      targetMs: 20,
      expect: { strategy: 'none', count: 0 },
      search,
      run: find(base, search),
    }),
  );
}

// miss-40. The fast miss: a 40-line old_string of which no line is in the 10,000-line
// file (trimmed), through fuzzyReplace: NO_MATCH, with the candidates it shows.
{
  const present = new Set(baseLines.map((l) => l.trim()));
  const search = makeLines(400, 40)
    .filter((l) => l.trim() !== '' && !present.has(l.trim()))
    .slice(0, 40)
    .join('\n');
  const run = () => {
    const result = fuzzyReplace(base, search, 'replaced();');
    if (result.ok || result.code !== 'NO_MATCH' || (result.candidates ?? []).length === 0) {
      throw new Error(`miss-40: expected NO_MATCH with candidates, got ${result.ok ? 'ok' : result.code}`);
    }
    return { strategy: 'none', count: 0 };
  };
  results.push(
    scenario('miss-40', {
      content: base,
      search,
      targetMs: 10,
      expect: { strategy: 'none', count: 0 },
      run,
    }),
  );
}

// miss-40-resembling. A 40-line old_string that is not in the 10,000-line file but looks like
// it: 40 of the file's lines in a row with other names and numbers (the same shape, the same
// blank and closing lines), through fuzzyReplace: NO_MATCH, with the candidates it shows.
{
  const search = baseLines
    .slice(5000, 5040)
    .map((line) =>
      line
        .replace(/\d+/g, (digits) => String((Number(digits) * 7 + 3) % 1000))
        .replace(/user|account|request|value|result/g, 'item'),
    )
    .join('\n');
  const run = () => {
    const result = fuzzyReplace(base, search, 'replaced();');
    if (result.ok || result.code !== 'NO_MATCH' || (result.candidates ?? []).length === 0) {
      throw new Error(
        `miss-40-resembling: expected NO_MATCH with candidates, got ${result.ok ? 'ok' : result.code}`,
      );
    }
    return { strategy: 'none', count: 0 };
  };
  results.push(
    scenario('miss-40-resembling', {
      content: base,
      search,
      targetMs: 20,
      expect: { strategy: 'none', count: 0 },
      run,
    }),
  );
}

// 4b. block_anchor among 2,000 near-identical blocks: five-line blocks with the same anchors
// and the same middle but for one number each; the search is one of them with its middle
// edited, so many blocks pass and every one of them is scored.
{
  const lines = [];
  for (let b = 0; b < 2_000; b++) {
    lines.push(
      '  try {',
      `    const value = compute(record, ${b});`,
      '    await store.save(value, { retries: 3 });',
      "    log.info('saved', value.id);",
      '  } catch (error) {',
    );
  }
  const content = lines.join('\n');
  const search = [
    '  try {',
    '    const value = compute(record, 1234, extra);',
    '    await store.save(value, { retries: 5 });',
    "    log.info('saved it', value.id);",
    '  } catch (error) {',
  ].join('\n');
  results.push(
    scenario('4b-block-anchor-2000-near-identical', {
      content,
      search,
      targetMs: 40,
      expect: { strategy: 'block_anchor' },
      run: find(content, search),
    }),
  );
}

// 4. block_anchor with 2,000 candidate anchor pairs: 2,000 five-line blocks that all
// open with `try {` and close with `} catch (error) {`; the search is one of them
// with its middle edited, so only its own block passes the 0.6 similarity.
{
  const next = rng(4);
  const lines = [];
  const body = makeLines(6_000, 4).filter((l) => l.trim() !== '' && l.trim() !== '}');
  for (let b = 0; b < 2_000; b++) {
    lines.push(
      '  try {',
      body[(b * 3) % body.length],
      body[(b * 3 + 1) % body.length],
      body[(b * 3 + 2) % body.length],
    );
    lines.push('  } catch (error) {');
  }
  const content = lines.join('\n');
  const block = lines.slice(1234 * 5, 1234 * 5 + 5);
  const search = [block[0], ...block.slice(1, 4).map((l) => mutate(l, 0.15, next)), block[4]].join('\n');
  results.push(
    scenario('4-block-anchor-2000-pairs', {
      content,
      targetMs: 40,
      expect: { strategy: 'block_anchor', count: 1 },
      search,
      run: find(content, search),
    }),
  );
}

// 5. replaceAll with 20,000 line_trimmed matches: a two-line statement repeated
// 20,000 times at a deeper indentation than the search gives it.
{
  const filler = makeLines(10_000, 5);
  const lines = [];
  for (let i = 0; i < 20_000; i++) {
    lines.push('      await flush(buffer);', '      buffer.length = 0;');
    if (i % 2 === 0) lines.push(filler[i >> 1]);
  }
  const content = lines.join('\n');
  const run = () => {
    const result = fuzzyReplace(
      content,
      'await flush(buffer);\nbuffer.length = 0;',
      'await flush(buffer, { sync: true });\nbuffer.length = 0;',
      {
        replaceAll: true,
      },
    );
    if (!result.ok) throw new Error(`5: ${result.code}`);
    return { strategy: result.strategy, count: result.count };
  };
  results.push(
    scenario('5-replace-all-20000-line-trimmed', {
      content,
      targetMs: 100,
      expect: { strategy: 'line_trimmed', count: 20_000 },
      run,
    }),
  );
}

// 6. A context_aware hit in a 50,000-line file: a 12-line pattern whose first and
// last lines (so no anchors) and some others were edited, each line staying within
// the line threshold (the first and last score 0.92 and 0.86).
{
  const next = rng(6);
  const lines = makeLines(50_000, 6);
  const at = 41_234;
  const original = lines.slice(at, at + 12);
  const search = original
    .map((l, i) => (i === 0 || i === 11 ? mutate(l, 0.15, next) : i % 3 === 0 ? mutate(l, 0.05, next) : l))
    .join('\n');
  const content = lines.join('\n');
  results.push(
    scenario('6-context-aware-50000-lines', {
      content,
      targetMs: 100,
      expect: { strategy: 'context_aware', count: 1 },
      search,
      run: find(content, search),
    }),
  );
}

// 7. The bound: 1 MB of content and a 200-line pattern that matches nowhere.
{
  const lines = makeLines(30_000, 7);
  let content = lines.join('\n');
  while (Buffer.byteLength(content) < 1_000_000) content += `\n${lines[content.length % lines.length]}`;
  content = content.slice(0, 1_000_000);
  const search = makeLines(200, 77).join('\n');
  results.push(
    scenario('7-bound-1mb-200-line-pattern', {
      content,
      targetMs: 250,
      expect: { strategy: 'none', count: 0 },
      search,
      run: find(content, search),
    }),
  );
}

if (results.some((pass) => !pass)) process.exitCode = 1;
