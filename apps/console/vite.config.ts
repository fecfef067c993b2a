import { defaultClientConditions, defineConfig } from 'vite';

// Workspace packages resolve to their TypeScript sources (the `source` export condition), as in the
// tests: the console bundles the SDK's browser-safe entry without waiting for its dist/.
export default defineConfig({
  base: '/console/',
  resolve: { conditions: ['source', ...defaultClientConditions] },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', assetsInlineLimit: 0 },
});
