/**
 * docs/operations.md gives every environment variable the API and the workers read, with its range:
 * each variable found in their source has a row with a range, and each integer's range there is the
 * one the code checks (`reader.integer(name, fallback, min, max)`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../', import.meta.url));

/** The sources of the API and the worker processes: the apps, and the packages they run. */
const SOURCES = [
  'apps/api/src',
  'apps/worker/src',
  ...['agent', 'config', 'mcp', 'outbound', 'protocol', 'store', 'telemetry', 'tools'].map(
    (name) => `packages/${name}/src`,
  ),
];

/** Named in the source but not read from an operator's environment. */
const NOT_SETTINGS = new Set([
  // Set by the worker on the commands it starts, to find their processes again.
  'TETHER_PROCESS_TAG',
]);

function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts'))
        files.push(path);
    }
  };
  for (const dir of SOURCES) walk(join(root, dir));
  return files;
}

const sources = sourceFiles().map((file) => ({ file, text: readFileSync(file, 'utf8') }));

/**
 * Every variable the code reads: a string literal that is a whole name of Tether's, a provider's,
 * Redis's or OpenTelemetry's, a name passed to the config reader (`PORT`, `HOST`, `LOG_LEVEL`), or
 * `process.env.NAME`.
 */
function variablesRead(): Map<string, string> {
  const found = new Map<string, string>();
  const patterns = [
    /['"]((?:TETHER|OPENAI|ANTHROPIC|REDIS|OTEL)_[A-Z0-9_]+)['"]/g,
    /reader\.(?:integer|string|optional|boolean|oneOf)\(\s*'([A-Z][A-Z0-9_]*)'/g,
    /process\.env\.([A-Z][A-Z0-9_]*)/g,
  ];
  for (const { file, text } of sources) {
    for (const pattern of patterns) {
      for (const match of text.matchAll(pattern)) {
        const name = match[1] as string;
        if (!NOT_SETTINGS.has(name) && !found.has(name)) found.set(name, file.slice(root.length));
      }
    }
  }
  return found;
}

/** The variable tables of docs/operations.md: each variable's range cell. */
function documentedRanges(): Map<string, string> {
  const doc = readFileSync(join(root, 'docs/operations.md'), 'utf8');
  const ranges = new Map<string, string>();
  let inTable = false;
  for (const line of doc.split('\n')) {
    if (line.startsWith('| variable | default | range | meaning |')) inTable = true;
    else if (!line.startsWith('|')) inTable = false;
    if (!inTable) continue;
    const cells = line.split(' | ');
    const names = [...(cells[0] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1] as string);
    for (const name of names) {
      if (ranges.has(name)) listedTwice.push(name);
      ranges.set(name, (cells[2] ?? '').trim());
    }
  }
  return ranges;
}

/** The variables with more than one row (filled by {@link documentedRanges}). */
const listedTwice: string[] = [];

/** `7 * 24 * 3600` → 604800; undefined for anything but digits, `_` and `*`. */
function evaluate(expression: string): number | undefined {
  const text = expression.trim();
  if (!/^[\d_]+(?:\s*\*\s*[\d_]+)*$/.test(text)) return undefined;
  return text.split('*').reduce((product, factor) => product * Number(factor.trim().replaceAll('_', '')), 1);
}

/** Every `reader.integer(name, fallback, min, max)` whose bounds are literal numbers. */
function integerBounds(): { name: string; min: number; max: number }[] {
  const bounds: { name: string; min: number; max: number }[] = [];
  const call = /reader\.integer\(\s*'([A-Z][A-Z0-9_]*)',\s*[^,]+,\s*([^,]+),\s*([^,)]+?)\s*,?\s*\)/g;
  for (const { text } of sources) {
    for (const match of text.matchAll(call)) {
      const min = evaluate(match[2] as string);
      const max = evaluate(match[3] as string);
      const name = match[1] as string;
      // A variable read twice with the same bounds (PORT) is one.
      const known = bounds.some((bound) => bound.name === name && bound.min === min && bound.max === max);
      if (min !== undefined && max !== undefined && !known) bounds.push({ name, min, max });
    }
  }
  return bounds;
}

describe('docs/operations.md', () => {
  const read = variablesRead();
  const documented = documentedRanges();

  it('gives each variable one row', () => {
    expect(listedTwice).toEqual([]);
  });

  it('finds the variables the code reads (the scan works)', () => {
    for (const name of ['PORT', 'HOST', 'LOG_LEVEL', 'REDIS_URL', 'OPENAI_API_KEY', 'TETHER_TOKEN_TTL_S']) {
      expect(read.has(name), name).toBe(true);
    }
    expect(read.size).toBeGreaterThan(90);
    expect(integerBounds().length).toBeGreaterThan(60);
  });

  it('gives every variable the code reads, with its range', () => {
    const missing = [...read]
      .filter(([name]) => !documented.has(name))
      .map(([name, file]) => `${name} (${file})`);
    expect(missing, 'variables read but not in a table of docs/operations.md').toEqual([]);
    const rangeless = [...read.keys()].filter((name) => documented.get(name) === '');
    expect(rangeless, 'variables without a range').toEqual([]);
  });

  it("gives each integer's range as the code checks it", () => {
    const wrong = integerBounds()
      .filter(
        ({ name, min, max }) => !documented.get(name)?.replaceAll(',', '').startsWith(`${min} to ${max}`),
      )
      .map(
        ({ name, min, max }) =>
          `${name}: the code takes ${min} to ${max}, the doc says "${documented.get(name)}"`,
      );
    expect(wrong).toEqual([]);
  });
});
