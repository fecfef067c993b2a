import { readFile } from 'node:fs/promises';
import type { Plugin } from 'vite';

/**
 * What the suite's config and the stress's (apps/worker/test/stress/vitest.config.ts) share.
 *
 * Workspace packages resolve to their TypeScript sources in tests (the `source` export condition),
 * so unit tests never need a build. Packages outside the workspace that publish a `source`
 * condition of their own (raw TypeScript, reached through the MCP SDK's client) go through Vite,
 * which compiles it, rather than to Node.
 */
const INLINE = ['@modelcontextprotocol/sdk', 'eventsource', 'eventsource-parser'];

export const shared = {
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'], externalConditions: ['source'] } },
  server: { deps: { inline: INLINE } },
  plugins: [dependenciesWithoutSourceMaps(INLINE)],
};

/**
 * The dependencies Vite compiles ship source maps that name sources they do not publish, and Vite
 * warned of each of their files ("points to missing source files"), dozens of lines in every test
 * log. They load here without their map comments: a stack through them points at their own files.
 */
function dependenciesWithoutSourceMaps(names: readonly string[]): Plugin {
  const inlined = names.map((name) => `/node_modules/${name}/`);
  return {
    name: 'dependencies-without-source-maps',
    enforce: 'pre',
    async load(id) {
      const file = id.split('?')[0] ?? id;
      if (!file.endsWith('.js') || !inlined.some((dir) => file.includes(dir))) return null;
      const code = await readFile(file, 'utf8');
      return { code: code.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n'), map: null };
    },
  };
}
