import { defaultClientConditions, defineConfig } from 'vite';

// Workspace packages that have a `source` export condition resolve to their TypeScript sources, as in
// the tests; the SDK has none (it is published) and is bundled from its dist/, which pnpm build makes first.
export default defineConfig({
  base: '/console/',
  resolve: { conditions: ['source', ...defaultClientConditions] },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', assetsInlineLimit: 0 },
});
