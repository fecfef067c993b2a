/**
 * A worker that runs with less than it should says so loudly and everywhere an operator looks: the
 * sandbox that `auto` gave up although bubblewrap is installed (a workspace root under a directory
 * the sandbox user cannot search), and a command spawner that failed at its start. Each is an error
 * or warning line with its cause and its fix, a `degraded` worker in the API's `/readyz`, and, for
 * the sandbox, `tether_sandbox_mode` in the worker's metrics.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RunEvent } from '@tether/protocol';
import { freePort, testRedisEnv, testRedisTarget } from '@tether/testing';
import { startApiProcess, startWorkerProcess, type TestProcess } from '@tether/testing/scripts';
import { probeBwrap } from '@tether/tools';
import { afterEach, describe, expect, it } from 'vitest';
import { call, type Deployment, until, useDeployments } from './harness.js';

const deploy = useDeployments();
const bwrapWorks = (await probeBwrap()).ok;
const isRoot = process.getuid?.() === 0;

const started: TestProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((child) => child.stop('SIGKILL')));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

interface ReadyWorker {
  id: string;
  status: string;
  problems?: { part: string; cause: string; fix: string }[];
  sandbox: Record<string, unknown>;
}

/** A workspace root under a directory of mode 0700 owned by root: `nobody` cannot reach it. */
async function hiddenWorkspaceRoot(): Promise<{ hidden: string; root: string }> {
  const hidden = await mkdtemp(join(tmpdir(), 'tether-hidden-'));
  dirs.push(hidden);
  await chmod(hidden, 0o700);
  return { hidden, root: join(hidden, 'workspaces') };
}

/** A worker of `d`'s deployment, with its own environment and Node flags. */
async function startWorker(
  d: Deployment,
  id: string,
  env: Record<string, string>,
  nodeFlags: string[] = [],
): Promise<TestProcess> {
  const worker = await startWorkerProcess({
    redisUrl: testRedisTarget().url,
    id,
    nodeFlags,
    env: {
      ...testRedisEnv(),
      TETHER_QUEUE_PREFIX: d.prefix,
      TETHER_QUEUE_SHARDS: String(d.keys.shards),
      TETHER_WORKSPACE_ROOT: d.workspaceRoot,
      TETHER_ALLOW_REPLAY: '1',
      TETHER_WORKER_CONCURRENCY: '2',
      LOG_LEVEL: 'info',
      ...env,
    },
  });
  started.push(worker);
  return worker;
}

/** The API's `/readyz` entry of worker `id`, once it is listed. */
async function readyEntry(d: Deployment, id: string): Promise<ReadyWorker> {
  const api = await startApiProcess({
    redisUrl: testRedisTarget().url,
    env: {
      ...testRedisEnv(),
      TETHER_QUEUE_PREFIX: d.prefix,
      TETHER_QUEUE_SHARDS: String(d.keys.shards),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
  });
  started.push(api);
  let entry: ReadyWorker | undefined;
  await until(async () => {
    const response = await fetch(`${api.url}/readyz`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; workers: ReadyWorker[] };
    expect(body.status).toBe('ok');
    entry = body.workers.find((worker) => worker.id === id);
    return entry !== undefined;
  }, `worker ${id} in /readyz`);
  return entry as ReadyWorker;
}

/** The log lines of `child` (pino JSON). */
function logLines(child: TestProcess): { level: number; msg: string; [key: string]: unknown }[] {
  return child
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

/** The value of the sample `series` in a Prometheus text page, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function bashResult(d: Deployment, command: string): Promise<RunEvent> {
  const runId = await d.submit([{ toolCalls: [call('bash', { command })] }, { content: 'done' }]);
  return d.waitForEvent(runId, 'tool.result');
}

describe('a degraded worker', () => {
  it.skipIf(!bwrapWorks || !isRoot)(
    'auto that falls back with bubblewrap installed: an error with the cause and the chmod fix, degraded in /readyz, tether_sandbox_mode{mode="none"} 1',
    async () => {
      const d = await deploy('degraded-auto');
      const { hidden, root } = await hiddenWorkspaceRoot();
      const port = await freePort();
      const worker = await startWorker(d, 'worker-auto', {
        TETHER_SANDBOX: 'auto',
        TETHER_WORKSPACE_ROOT: root,
        TETHER_METRICS_PORT: String(port),
      });

      await worker.waitFor(/"level":50/);
      const errors = logLines(worker).filter((line) => line.level === 50);
      expect(errors).toHaveLength(1);
      expect(errors[0]?.msg).toContain(
        'TETHER_SANDBOX=auto fell back to none although bubblewrap is installed',
      );
      expect(errors[0]?.msg).toContain(`${hidden} is not searchable by uid 65534`);
      expect(errors[0]).toMatchObject({ fix: `chmod o+x ${hidden}` });
      expect(errors[0]?.msg).toContain(`chmod o+x ${hidden}`);

      const entry = await readyEntry(d, 'worker-auto');
      expect(entry.status).toBe('degraded');
      expect(entry.problems).toEqual([
        {
          part: 'sandbox',
          cause: expect.stringContaining(`${hidden} is not searchable`),
          fix: `chmod o+x ${hidden}`,
        },
      ]);
      expect(entry.sandbox).toMatchObject({
        requested: 'auto',
        effective: 'none',
        bwrap: expect.any(String),
      });

      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(sample(metrics, 'tether_sandbox_mode{mode="none"}')).toBe(1);
      expect(sample(metrics, 'tether_sandbox_mode{mode="bwrap"}')).toBe(0);
      expect(sample(metrics, 'tether_sandbox_mode{mode="unavailable"}')).toBe(0);

      // As `auto` says: the command runs, without a sandbox.
      const result = await bashResult(d, 'echo ran');
      expect(result.data).toMatchObject({ ok: true });
    },
  );

  it.skipIf(!bwrapWorks || !isRoot)(
    'bwrap with the same workspace root: bash refused (ERR_TOOL_SANDBOX_UNAVAILABLE), degraded, tether_sandbox_mode{mode="unavailable"} 1',
    async () => {
      const d = await deploy('degraded-bwrap');
      const { hidden, root } = await hiddenWorkspaceRoot();
      const port = await freePort();
      const worker = await startWorker(d, 'worker-bwrap', {
        TETHER_SANDBOX: 'bwrap',
        TETHER_WORKSPACE_ROOT: root,
        TETHER_METRICS_PORT: String(port),
      });
      const result = await bashResult(d, 'touch ran');
      expect(result.data).toMatchObject({ ok: false });
      // ERR_TOOL_SANDBOX_UNAVAILABLE's message, for the model.
      expect((result.data as { content: string }).content).toContain(
        'bash cannot run: the sandbox (bubblewrap) does not work on this host',
      );
      expect((result.data as { content: string }).content).toContain(`${hidden} is not searchable`);
      await worker.waitFor(/"level":50/);
      expect(logLines(worker).filter((line) => line.level === 50)[0]).toMatchObject({
        fix: `chmod o+x ${hidden}`,
      });

      const entry = await readyEntry(d, 'worker-bwrap');
      expect(entry.status).toBe('degraded');
      expect(entry.problems).toEqual([
        {
          part: 'sandbox',
          cause: expect.stringContaining(`${hidden} is not searchable`),
          fix: `chmod o+x ${hidden}`,
        },
      ]);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(sample(metrics, 'tether_sandbox_mode{mode="unavailable"}')).toBe(1);
      expect(sample(metrics, 'tether_sandbox_mode{mode="none"}')).toBe(0);
    },
  );

  it('a command spawner that fails at its start: one warning with its cause, degraded in /readyz, commands still run', async () => {
    const d = await deploy('degraded-spawner');
    // A perl that fails as one without its POSIX module does: a message, and exit code 2.
    const dir = await mkdtemp(join(tmpdir(), 'tether-perl-'));
    dirs.push(dir);
    const perl = join(dir, 'perl');
    await writeFile(
      perl,
      `#!/bin/sh\necho "Can't locate POSIX.pm in @INC (you may need to install the POSIX module)" >&2\nexit 2\n`,
      { mode: 0o755 },
    );
    // The seam: the worker's own @tether/tools, told which perl to run before the worker starts.
    const tools = new URL('../../../packages/tools/dist/command-spawner.js', import.meta.url).href;
    const preload = join(dir, 'preload.mjs');
    await writeFile(
      preload,
      `import { useCommandSpawner } from ${JSON.stringify(tools)};\nuseCommandSpawner(true, { perl: ${JSON.stringify(perl)} });\n`,
    );
    const worker = await startWorker(d, 'worker-spawner', { TETHER_SANDBOX: 'none' }, [
      '--import',
      pathToFileURL(preload).href,
    ]);

    // Both commands run, spawned by the worker itself; the spawner's failure is said once.
    for (const command of ['echo one', 'echo two']) {
      expect((await bashResult(d, command)).data).toMatchObject({ ok: true });
    }
    const warnings = logLines(worker).filter((line) => /command spawner/.test(line.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40 });
    expect(warnings[0]?.msg).toContain(`the command spawner (${perl}) exited with code 2 before it answered`);
    expect(warnings[0]?.msg).toContain("Can't locate POSIX.pm in @INC");

    const entry = await readyEntry(d, 'worker-spawner');
    expect(entry.status).toBe('degraded');
    expect(entry.problems).toEqual([
      {
        part: 'spawner',
        cause: expect.stringContaining("Can't locate POSIX.pm in @INC"),
        fix: expect.stringContaining('restart the worker'),
      },
    ]);
  });

  it('a worker with nothing wrong is ok in /readyz, without problems', async () => {
    const d = await deploy('degraded-none');
    await startWorker(d, 'worker-fine', { TETHER_SANDBOX: 'none' });
    const entry = await readyEntry(d, 'worker-fine');
    expect(entry.status).toBe('ok');
    expect(entry.problems).toBeUndefined();
  });
});
