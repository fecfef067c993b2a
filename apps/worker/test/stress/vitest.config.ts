import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { shared } from '../../../../vitest.shared.js';

/**
 * `pnpm stress:engine`: the engine's race stress file on one Redis, then on a Redis Cluster of
 * three masters, each started by the suite's own global setups. `STRESS_OPS` (the root script sets
 * 2,000) and `STRESS_SEED` choose the run. `pnpm test` runs the same file quickly (120 operations)
 * in its cluster project.
 */
const FILE = 'apps/worker/test/stress/engine-stress.stress.ts';
const project = (name: string, globalSetup: string, groupOrder: number) => ({
  extends: true as const,
  test: {
    name,
    include: [FILE],
    globalSetup: [globalSetup],
    fileParallelism: false,
    sequence: { groupOrder },
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

export default defineConfig({
  root: fileURLToPath(new URL('../../../../', import.meta.url)),
  resolve: shared.resolve,
  ssr: shared.ssr,
  plugins: shared.plugins,
  test: {
    globals: false,
    server: shared.server,
    projects: [
      // Groups run from the lowest (0 would be the default, beside any project without one).
      project('stress-redis', 'packages/testing/src/global-setup.ts', 1),
      project('stress-cluster', 'packages/testing/src/cluster-global-setup.ts', 2),
    ],
  },
});
