/**
 * The API checks model profiles and specs without loading a model SDK: from
 * its built entry point, no import reaches `openai` (or any other provider
 * SDK). The walk reads the built `dist/` files (run after `pnpm build`, as
 * every test is), following relative imports and `@tether/*` package
 * entries through their `exports`.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The file a `@tether/<name>[/<sub>]` specifier loads, from the package's `exports`. */
function tetherEntry(specifier: string): string {
  const [, name = '', ...rest] = specifier.split('/');
  const dir = path.join(ROOT, 'packages', name);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
    exports: Record<string, { default: string }>;
  };
  const key = rest.length === 0 ? '.' : `./${rest.join('/')}`;
  const entry = manifest.exports[key];
  if (entry === undefined) throw new Error(`${specifier}: no export ${key}`);
  return path.join(dir, entry.default);
}

/**
 * Every bare package (not relative, not `node:`, not `@tether/*`) that `entry` can load; with
 * `staticOnly`, only through static imports (what loads at start, whatever the configuration).
 */
function reachablePackages(entry: string, staticOnly = false): Set<string> {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(SPECIFIER)) {
      if (staticOnly && match[2] !== undefined) continue;
      const specifier = match[1] ?? match[2] ?? '';
      if (specifier.startsWith('.')) queue.push(path.resolve(path.dirname(file), specifier));
      else if (specifier.startsWith('@tether/')) queue.push(tetherEntry(specifier));
      else if (!specifier.startsWith('node:')) packages.add(specifier);
    }
  }
  return packages;
}

describe('the API', () => {
  const server = path.join(ROOT, 'apps/api/dist/server.js');

  it.skipIf(!existsSync(server))('loads no model SDK', () => {
    const packages = reachablePackages(server);
    // The walk does reach the API's own dependencies, so an empty set cannot pass by accident.
    expect(packages).toContain('fastify');
    expect([...packages].filter((name) => /^(openai|@anthropic-ai\/)/.test(name))).toEqual([]);
  });

  it.skipIf(!existsSync(server))(
    'would see the SDK through the main @tether/agent entry (the walk can fail)',
    () => {
      expect(reachablePackages(tetherEntry('@tether/agent'))).toContain('openai');
    },
  );
});

describe('traces off', () => {
  const entries = ['apps/api/dist/server.js', 'apps/worker/dist/main.js'].map((file) =>
    path.join(ROOT, file),
  );

  it.skipIf(!entries.every((file) => existsSync(file)))(
    'the API and the worker load no OpenTelemetry package at start: only the dynamic import behind OTEL_EXPORTER_OTLP_ENDPOINT does',
    () => {
      const otel = (packages: Set<string>) => [...packages].filter((name) => /opentelemetry|otel/.test(name));
      for (const entry of entries) {
        expect(otel(reachablePackages(entry, true))).toEqual([]);
        expect(otel(reachablePackages(entry))).toEqual(
          expect.arrayContaining(['@opentelemetry/sdk-node', 'bullmq-otel']),
        );
      }
    },
  );
});
