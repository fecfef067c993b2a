import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { shared } from './vitest.shared.js';

// Workspace packages resolve to their TypeScript sources in tests (see vitest.shared.ts), so unit
// tests never need a build. Tests that start real processes (workers, API servers) run the built
// `dist/` entry points instead.

/**
 * The integration files that run again on a local Redis Cluster of three masters (the `cluster`
 * project). Those of them that start API and worker processes ({@link CLUSTER_ONLY}) run there only:
 * a cluster is the stricter of the two set-ups (it refuses a script or a pipeline that crosses hash
 * slots), a single Redis (one per file) is what every other integration file runs on, and running
 * the longest files twice made the suite half again as long. The stores' scripts run on both.
 */
const CLUSTER_FILES = [
  'packages/store/test/slot-pipelines.int.test.ts',
  'packages/store/test/run-store.int.test.ts',
  // The crew's scripts: a crew tree keeps its keys in its root's hash slot.
  'packages/store/test/crew-store.int.test.ts',
  // Deleting a run: its crew tree's keys in the root's slot, its index entries in the tenant's.
  'packages/store/test/run-removal.int.test.ts',
  // Listing by metadata: the indexes in the tenant's slot, beside its list.
  'packages/store/test/run-list.int.test.ts',
  // Runs waiting across the upgrade to the waitpoint: each run's keys moved in its slot.
  'packages/store/test/waitpoint-migration.int.test.ts',
  // A cancel giving back its tenant slot: the run's keys in its slot, the tenant's slots in the tenant's.
  'packages/store/test/cancel-tenant-slot.int.test.ts',
  // Cancels a process left unfinished: the set of them in its own slot, each run's keys in theirs.
  'packages/store/test/cancel-recovery.int.test.ts',
  // Delayed runs: a run's record and events in its slot, its job in its shard's.
  'packages/store/test/scheduled-runs.int.test.ts',
  // Expiry: each run's keys in its slot, the set of deadlines in its own, read apart by the sweep.
  'packages/store/test/expiry.int.test.ts',
  // A tenant's registered MCP servers: one hash under the tenant's tag.
  'packages/store/test/mcp-server-store.int.test.ts',
  // Skills: a tenant's skills in one hash slot, limits checked in the script that writes.
  'packages/store/test/skill-store.int.test.ts',
  // Webhooks: a tenant's endpoints and deliveries in one hash slot, a run's cursor beside them.
  'packages/store/test/webhooks.int.test.ts',
  // Schedules: a tenant's records in its slot; a run made with a tick's id in the run's own.
  'packages/store/test/schedule-store.int.test.ts',
  // The usage ledger and budgets: a tenant's days, months and warnings under the tenant's tag.
  'packages/store/test/usage-ledger.int.test.ts',
  'apps/api/test/skills.int.test.ts',
  // Skills end to end: the index in the prompt, a script under bubblewrap, a skill written by a run.
  'apps/api/test/skills-run.int.test.ts',
  // Schedules: a tenant's records under its tag, the job schedulers in the schedules queue's own slot.
  'apps/api/test/schedules.int.test.ts',
  // Schedules fired by a worker: the schedules queue on its own tag, each run in its own slot.
  'apps/worker/test/schedules.int.test.ts',
  'apps/api/test/rate-limit-store.int.test.ts',
  // The API in process: submit, list, read, answer, cancel; SSE replay and resync.
  'apps/api/test/runs.int.test.ts',
  'apps/api/test/events.int.test.ts',
  // Worker processes: submit to completion, clarify (suspend, answer, time out), cancel in
  // each state, kill -9 recovery, SIGTERM hand-over, a resumed event stream.
  'apps/worker/test/worker.int.test.ts',
  // API and worker processes: SSE across reconnects, two APIs and two workers.
  'apps/api/test/e2e.int.test.ts',
  // Sharded queues: each shard's own hash tag, so on a cluster the queues are on several masters.
  'apps/worker/test/shards.int.test.ts',
  // A tenant's cap on running runs: its slots under the tenant's hash tag, its runs' keys in theirs.
  'apps/worker/test/tenant-cap.int.test.ts',
  // A run cancelled as a worker puts it in its tenant's line: its flag in its slot, the line in the tenant's.
  'apps/worker/test/tenant-cancel.int.test.ts',
  // Sessions: a session's runs keep their keys in the session's hash slot.
  'apps/api/test/sessions.int.test.ts',
  // A session's history: runs in order, the transcript, what the model is sent of it.
  'apps/api/test/sessions-history.int.test.ts',
  // The WebSocket gateway: two APIs and two workers, reconnects, tenancy.
  'apps/api/test/ws.int.test.ts',
  // The gateway's limits: bad frames, rates, floods, sockets per tenant, slow readers.
  'apps/api/test/ws-limits.int.test.ts',
  // The crew: a tree of runs in its root's hash slot, children reporting in the step that ends them.
  'apps/api/test/crew.int.test.ts',
  // Batches: a batch's runs in its hash slot, each counted in the step that ends it.
  'apps/api/test/batches.int.test.ts',
  // Memory: a scope's keys in one hash slot, its scripts and the copies other processes keep.
  'packages/store/test/memory-store.int.test.ts',
  // Client tools: a run's calls and outputs in its hash slot; faults around the request (kill -9).
  'apps/worker/test/client-tools.int.test.ts',
  // The invariant checker: a SCAN of every master, each run's keys read in their own slots.
  'packages/store/test/invariants.int.test.ts',
  // The engine's race stress, quick (seed 29, 120 operations), and each race fixed as a case of its
  // own; `pnpm stress:engine` runs 2,000 operations on one Redis and on the cluster.
  'apps/worker/test/stress/engine-stress.stress.ts',
];

/**
 * The files of {@link CLUSTER_FILES} that run one at a time, alone (see {@link SERIAL_FILES}): the
 * engine's stress kills workers with -9 and stalls them at random.
 */
const CLUSTER_SERIAL_FILES = ['apps/worker/test/stress/engine-stress.stress.ts'];

/** The files of {@link CLUSTER_FILES} that start processes or a whole API: on the cluster only. */
const CLUSTER_ONLY = CLUSTER_FILES.filter((file) => file.startsWith('apps/'));

/**
 * The integration files that time what they check against the machine itself: kill -9 faults, a
 * paused or killed Redis, locks and leases that must lapse, and the browser. They run one at a
 * time (the `serial` project), after everything else, with nothing beside them; every other
 * integration file runs beside others, each with a Redis of its own (packages/testing/src/file-redis.ts).
 */
const SERIAL_FILES = [
  // kill -9 of workers at chosen points, then another worker's takeover within a lock's life.
  'apps/worker/test/faults.int.test.ts',
  'apps/worker/test/crew-faults.int.test.ts',
  'apps/worker/test/client-tools-faults.int.test.ts',
  'packages/tools/test/launch-faults.int.test.ts',
  // A lapsed tenant-slot lease, a cancel missed while a worker was paused, BullMQ's lock renewals.
  'apps/worker/test/tenant-lease.int.test.ts',
  // A schedule's ticks of a second, counted across three workers while one is killed with -9.
  'apps/worker/test/schedule-faults.int.test.ts',
  'apps/worker/test/cancel-missed.int.test.ts',
  'packages/store/test/bullmq-lock-tracking.int.test.ts',
  // Redis paused, killed and restarted under running processes.
  'apps/worker/test/degraded.int.test.ts',
  'apps/api/test/redis-outage.int.test.ts',
  'packages/testing/src/redis.int.test.ts',
  // The whole local stack's processes, started and stopped.
  'packages/testing/src/stack.int.test.ts',
  // The sandbox's escape corpus: a fork bomb held within 5 s, and no bash left on the host after it
  // (counted host-wide): beside other files' commands it ran past its 5 s and counted theirs.
  'packages/tools/src/builtin/bash-escape.test.ts',
];

/**
 * Chromium driving the console (the `browser` project): beside the cluster's files, each with a
 * Redis of its own. Its waits are for what the page shows, with no deadline tighter than 10 s, so
 * it does not time the machine; alone at the end it made the suite a minute longer.
 */
const BROWSER_FILES = ['apps/console/test/console.int.test.ts'];

/**
 * The files that take longest, each started first in its project: on a fresh clone vitest knows no
 * durations and starts the largest files first, so a long file that is not large (the first-hour
 * walk waits a whole minute) started late would hold its group open after every other file ended.
 */
const LONG_FIRST = [
  'apps/console/test/first-hour.int.test.ts',
  'apps/console/test/console.int.test.ts',
  'apps/api/test/ws.int.test.ts',
  'apps/api/test/ws-limits.int.test.ts',
  'apps/api/test/sessions.int.test.ts',
  'apps/api/test/sessions-history.int.test.ts',
  'apps/worker/test/worker.int.test.ts',
  'apps/api/test/e2e.int.test.ts',
  'apps/worker/test/tenant-cap.int.test.ts',
];

/** Vitest's order (groups, projects, what it knows of each file), with {@link LONG_FIRST} first in each project. */
class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = LONG_FIRST.findIndex((path) => file.moduleId.endsWith(path));
      return index === -1 ? LONG_FIRST.length : index;
    };
    const block = (file: TestSpecification) =>
      `${file.project.config.sequence.groupOrder}:${file.project.name}`;
    const position = new Map(sorted.map((file, index) => [file, index]));
    const firstOfBlock = new Map<string, number>();
    for (const [index, file] of sorted.entries())
      if (!firstOfBlock.has(block(file))) firstOfBlock.set(block(file), index);
    return [...sorted].sort(
      (a, b) =>
        (firstOfBlock.get(block(a)) ?? 0) - (firstOfBlock.get(block(b)) ?? 0) ||
        rank(a) - rank(b) ||
        (position.get(a) ?? 0) - (position.get(b) ?? 0),
    );
  }
}

export default defineConfig({
  resolve: shared.resolve,
  ssr: shared.ssr,
  plugins: shared.plugins,
  test: {
    globals: false,
    server: shared.server,
    // Files side by side, more of them than this machine's two cores: an integration file spends
    // most of its time waiting on the processes it started. Four made the CPU-heavy unit files (a
    // fork bomb within its 5 s) fail beside the rest. (Projects that run together must agree.)
    maxWorkers: 3,
    sequence: { sequencer: LongFirstSequencer },
    // In CI a JSON report is written too, for .ci/run's closing "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.ci-results/vitest.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'packages/*/src/**/*.test.ts',
            'apps/*/src/**/*.test.ts',
            'apps/*/test/**/*.test.ts',
            'packages/*/test/**/*.test.ts',
            'test/**/*.test.ts',
          ],
          exclude: ['**/*.int.test.ts', '**/node_modules/**', '**/dist/**', ...SERIAL_FILES],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: [
            'packages/*/src/**/*.int.test.ts',
            'apps/*/src/**/*.int.test.ts',
            'apps/*/test/**/*.int.test.ts',
            'packages/*/test/**/*.int.test.ts',
            'test/**/*.int.test.ts',
          ],
          exclude: ['**/node_modules/**', '**/dist/**', ...CLUSTER_ONLY, ...SERIAL_FILES, ...BROWSER_FILES],
          // Each file its own Redis, files side by side (see maxWorkers above).
          setupFiles: ['packages/testing/src/file-redis.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'serial',
          include: SERIAL_FILES,
          exclude: ['**/node_modules/**', '**/dist/**'],
          setupFiles: ['packages/testing/src/file-redis.ts'],
          fileParallelism: false,
          // Last, alone: nothing else runs beside a file that times the machine.
          sequence: { groupOrder: 2 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          // Suites run again on a local Redis Cluster of three masters (REDIS_CLUSTER_NODES), which
          // the global setup starts: their helpers take it from testRedisEnv() and testRedisTarget().
          // Files side by side on the one cluster: each test's keys have a prefix of their own.
          name: 'cluster',
          include: CLUSTER_FILES.filter((file) => !CLUSTER_SERIAL_FILES.includes(file)),
          exclude: ['**/node_modules/**', '**/dist/**'],
          globalSetup: ['packages/testing/src/cluster-global-setup.ts'],
          // A group of its own (after the unit and integration files), as two cores run them all.
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: BROWSER_FILES,
          exclude: ['**/node_modules/**', '**/dist/**'],
          setupFiles: ['packages/testing/src/file-redis.ts'],
          // With the cluster's files: the unit and integration files keep the two cores busy before.
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          // The cluster's files that time the machine (see SERIAL_FILES): alone, last.
          name: 'cluster-serial',
          include: CLUSTER_SERIAL_FILES,
          exclude: ['**/node_modules/**', '**/dist/**'],
          globalSetup: ['packages/testing/src/cluster-global-setup.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 3 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
