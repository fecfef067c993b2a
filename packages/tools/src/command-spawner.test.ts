import { spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLease } from './command-lease.js';
import {
  commandSpawnerPids,
  onSpawnerFailure,
  type SpawnedProcess,
  type SpawnerFailure,
  spawnerAvailable,
  spawnWithLease,
  useCommandSpawner,
} from './command-spawner.js';
import { isProcessAlive } from './process-tree.js';
import { runCommand } from './run-command.js';
import { findHostPrograms, probeBwrap, sandboxUserFor } from './sandbox.js';
import { callContext, createFixture, type Fixture, invoke } from './testing/fixtures.js';
import type { ToolResult } from './types.js';

const programs = findHostPrograms();
const bash = programs.bash as string;
const probe = await probeBwrap();
const user = sandboxUserFor();
const hasPerl = spawnerAvailable();
if (!hasPerl) console.warn('Skipping the command spawner tests: no perl on this host');

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  useCommandSpawner(true);
  await fx.cleanup();
});

/** Starts `argv` from the spawner of this process's lease, as a launcher is started. */
async function start(
  argv: string[],
  options: { env?: Record<string, string>; stdin?: 'pipe' | 'ignore' } = {},
): Promise<SpawnedProcess> {
  const lease = await commandLease(bash, 60_000);
  const started = await spawnWithLease(lease, {
    file: argv[0] as string,
    args: argv.slice(1),
    cwd: fx.workspace,
    env: options.env ?? { PATH: '/usr/bin:/bin' },
    stdin: options.stdin ?? 'ignore',
    user,
  });
  if (started instanceof Error) throw started;
  return started;
}

/** What a started process printed, and how it ended. */
async function finished(
  child: SpawnedProcess,
): Promise<{ stdout: string; stderr: string; code: number | null; signal: string | null }> {
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.on('close', (exitCode: number | null, signalCode: string | null) =>
      resolve([exitCode, signalCode]),
    ),
  );
  return { stdout, stderr, code, signal };
}

async function parentOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Live pids whose argv[0] is `name`, from the host's /proc. */
async function pidsNamed(name: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv0 = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0')[0];
      if (argv0 === name && isProcessAlive(Number(entry))) pids.push(Number(entry));
    } catch {
      // Exited while scanning.
    }
  }
  return pids;
}

/** The first of the parents of the process named `name` that is not a shell or bubblewrap of the command. */
async function spawnerOf(name: string): Promise<number> {
  // It prints `ready` just before it execs under that name.
  let named = await pidsNamed(name);
  for (let i = 0; i < 250 && named.length === 0; i++) {
    await delay(20);
    named = await pidsNamed(name);
  }
  expect(named).toHaveLength(1);
  let pid = named[0] as number;
  while (pid > 1 && pid !== process.pid && !commandSpawnerPids().includes(pid)) pid = await parentOf(pid);
  return pid;
}

/** The pids whose parent is `parent`, from the host's /proc. */
async function childrenOf(parent: number): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if ((await parentOf(Number(name))) === parent) pids.push(Number(name));
    } catch {
      // Exited while scanning.
    }
  }
  return pids;
}

describe.skipIf(!hasPerl)('the command spawner', () => {
  it('starts a program in a session of its own, in its directory, with exactly its environment and its pipes', async () => {
    const child = await start(
      [
        bash,
        '-c',
        [
          'echo "out $(pwd) $VISIBLE $(printenv HOME || echo nohome)"',
          'echo "err" >&2',
          'read -r line; echo "in $line"',
          'echo "ids $(id -u) $(id -g) $(id -G)"',
          'echo "sid $(ps -o sid= -p $$ | tr -d " ") pid $$"',
          'exit 7',
        ].join('\n'),
      ],
      { env: { PATH: '/usr/bin:/bin', VISIBLE: 'yes' }, stdin: 'pipe' },
    );
    child.stdin?.end('hello\n');
    const { stdout, stderr, code, signal } = await finished(child);
    const uid = user?.uid ?? process.getuid?.();
    const gid = user?.gid ?? process.getgid?.();
    expect(stdout).toContain(`out ${fx.workspace} yes nohome\n`);
    expect(stdout).toContain('in hello\n');
    expect(stdout).toContain(`ids ${uid} ${gid} ${gid}\n`);
    expect(stdout).toContain(`sid ${child.pid} pid ${child.pid}\n`);
    expect(stderr).toBe('err\n');
    expect({ code, signal }).toEqual({ code: 7, signal: null });
    expect(child.startTicks).toBeGreaterThan(0);
    // The launcher is the spawner's child, not a fork of the worker.
    expect(commandSpawnerPids()).toHaveLength(1);
  });

  it('gives the program its pipes and the lease, and no descriptor of the spawner or the worker', async () => {
    // What a program the worker spawns itself inherits beyond its stdio (none, unless the worker
    // itself was started with descriptors left open).
    const own = spawn('/bin/sleep', ['30'], { stdio: 'ignore' });
    const inherited = (await readdir(`/proc/${own.pid}/fd`)).map(Number).filter((fd) => fd > 2);
    own.kill('SIGKILL');
    const child = await start(['/bin/sleep', '30'], { stdin: 'pipe' });
    try {
      const fds = (await readdir(`/proc/${child.pid}/fd`)).map(Number).sort((a, b) => a - b);
      expect(fds).toEqual([0, 1, 2, 3, ...inherited.filter((fd) => fd !== 3)].sort((a, b) => a - b));
    } finally {
      process.kill(child.pid, 'SIGKILL');
    }
    expect(await finished(child)).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it('reports the exit of a program that ends at once, its start and its exit read together by a busy worker', async () => {
    await finished(await start([bash, '-c', 'true']));
    const lease = await commandLease(bash, 60_000);
    const starting = spawnWithLease(lease, {
      file: bash,
      args: ['-c', 'exit 3'],
      cwd: fx.workspace,
      env: { PATH: '/usr/bin:/bin' },
      stdin: 'ignore',
      user,
    });
    // The worker busy while the program starts and ends: both answers come in one read, and the
    // exit must still reach a listener added once the start is handed over.
    const until = Date.now() + 300;
    while (Date.now() < until);
    const child = await starting;
    if (child instanceof Error) throw child;
    const code = await Promise.race([
      new Promise((resolve) => child.on('exit', (exitCode: number | null) => resolve(exitCode))),
      delay(5000).then(() => 'no exit reported'),
    ]);
    expect(code).toBe(3);
    expect(child.exitCode).toBe(3);
  });

  it('reports a signal that ended the program by its name', async () => {
    const child = await start([bash, '-c', 'kill -TERM $$']);
    expect(await finished(child)).toMatchObject({ code: null, signal: 'SIGTERM' });
  });

  it('fails a start as spawn() does: the errno of the exec; a NUL, or an equals sign in a name, refused', async () => {
    await expect(start(['/nonexistent/program'])).rejects.toMatchObject({ code: 'ENOENT' });
    // One argument longer than the kernel takes.
    await expect(start([bash, '-c', `: ${'x'.repeat(200_000)}`])).rejects.toMatchObject({ code: 'E2BIG' });
    await expect(start([bash, '-c', 'echo a\0b'])).rejects.toMatchObject({ code: 'EINVAL' });
    await expect(start([bash, '-c', 'true'], { env: { 'A=B': 'x' } })).rejects.toMatchObject({
      code: 'EINVAL',
    });
    await expect(start([bash, '-c', 'true'], { env: { 'A\0B': 'x' } })).rejects.toMatchObject({
      code: 'EINVAL',
    });
    // The spawner took all of it and still starts.
    expect(await finished(await start([bash, '-c', 'echo still']))).toMatchObject({
      stdout: 'still\n',
      code: 0,
    });
  });
});

const sandboxes = probe.ok ? (['none', 'bwrap'] as const) : (['none'] as const);

describe.skipIf(!hasPerl)('the command spawner and runCommand', () => {
  const options = (tag: string, command: string, env: Record<string, string> = {}) => ({
    tag,
    command,
    workspace: fx.workspace,
    sandbox: 'none' as const,
    programs: { bash, sh: programs.sh as string },
    // As a `none` command runs: as the worker.
    user: undefined,
    leaseMs: 60_000,
    allowNetwork: false,
    env,
    tmpBytes: 1e8,
    fileSizeBytes: 1e9,
    cpuSeconds: 1000,
    openFiles: 1024,
    timeoutMs: 20_000,
    outputBytes: 10_000,
    streamBytes: 10_000,
    signal: new AbortController().signal,
  });

  it('runs a command once at most when its spawner is killed at any point of its start, and leaves nothing', async () => {
    await runCommand(options('run_spawnerwarm.x', 'true'));
    const count = path.join(fx.workspace, 'count');
    // A large environment keeps the spawner busy between its fork and its answer.
    const env: Record<string, string> = {};
    for (let i = 0; i < 2_000; i++) env[`V${i}`] = 'x';
    for (let trial = 0; trial < 4; trial++) {
      let killed = false;
      // Kills the spawner once it has forked (the third trial: at once; the fourth: once the command
      // runs), whichever serves the call.
      const poll = async (): Promise<void> => {
        while (!killed) {
          for (const spawner of commandSpawnerPids()) {
            const children = await readFile(`/proc/${spawner}/task/${spawner}/children`, 'latin1').catch(
              () => '',
            );
            if (children.trim() === '' && trial < 2) continue;
            if (trial === 3 && (await pidsNamed('tether-spawner-twice')).length === 0) continue;
            try {
              process.kill(spawner, 'SIGKILL');
              killed = true;
            } catch {
              // Gone already.
            }
          }
          await new Promise((resolve) => setImmediate(resolve));
        }
      };
      const polling = poll();
      const result = await runCommand(
        options(
          `run_spawnertwice${trial}.x`,
          `echo ran >> ${count}; exec -a tether-spawner-twice sleep 1`,
          env,
        ),
      ).catch((error: Error) => error);
      killed = true;
      await polling;
      // A copy started behind the worker's back would be running now.
      await delay(500);
      const ran = (await readFile(count, 'latin1').catch(() => '')).split('\n').filter(Boolean).length;
      expect(ran).toBeLessThanOrEqual(1);
      expect(await pidsNamed('tether-spawner-twice')).toEqual([]);
      // Failed to start (killed, if it ever ran), killed as it ran (the spawner gone after its start),
      // or run to its end (by the worker's own spawn, or before the kill): never twice.
      if (!(result instanceof Error) && result.exitSignal === null) {
        expect(result).toMatchObject({ outcome: 'exited', exitCode: 0 });
        expect(ran).toBe(1);
      } else if (!(result instanceof Error)) {
        expect(result.exitSignal).toBe('SIGKILL');
      }
      if (trial === 3) {
        expect(result).toMatchObject({ outcome: 'exited', exitCode: null, exitSignal: 'SIGKILL' });
        expect(ran).toBe(1);
      }
      await rm(count, { force: true });
    }
  }, 30_000);

  it('a spawner that fails at its start is off for good, told once with its cause, and commands run without it', async () => {
    // A perl that fails as one without its POSIX module does: a message, and exit code 2.
    const perl = path.join(fx.workspace, 'perl');
    await writeFile(perl, `#!/bin/sh\necho "Can't locate POSIX.pm in @INC" >&2\nexit 2\n`, { mode: 0o755 });
    useCommandSpawner(true, { perl });
    const failures: SpawnerFailure[] = [];
    const unwatch = onSpawnerFailure((failure) => failures.push(failure));
    try {
      const tool = fx.tool('bash', { sandbox: 'none' });
      for (const word of ['one', 'two']) {
        expect(await invoke(tool, { command: `echo ${word}` })).toEqual({
          ok: true,
          content: `Exit code: 0\nOutput:\n${word}\n`,
        });
      }
      await tool.close?.();
      expect(failures).toEqual([
        {
          perl,
          cause: `the command spawner (${perl}) exited with code 2 before it answered: Can't locate POSIX.pm in @INC`,
        },
      ]);
      expect(spawnerAvailable()).toBe(false);
    } finally {
      unwatch();
    }
  });
});

describe.skipIf(!hasPerl).each(sandboxes)('bash with sandbox %s and the command spawner', (sandbox) => {
  /** Runs a command that prints `ready` and sleeps; resolves once it printed. */
  function runUntilReady(signal?: AbortSignal): { ready: Promise<void>; result: Promise<ToolResult> } {
    let markReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    const tool = fx.tool('bash', {
      sandbox,
      emit: (event) => {
        if (event.type === 'tool.output' && event.data.chunk.includes('ready')) markReady();
      },
    });
    return {
      ready,
      result: invoke(
        tool,
        { command: 'echo ready; exec -a tether-spawner-test sleep 300' },
        callContext(signal),
      ),
    };
  }

  it("starts each command's launcher from the spawner", async () => {
    const cancel = new AbortController();
    const { ready, result } = runUntilReady(cancel.signal);
    await ready;
    // The command's process, up its parents, reaches a spawner, not this process.
    const spawner = await spawnerOf('tether-spawner-test');
    expect(commandSpawnerPids()).toContain(spawner);
    cancel.abort();
    expect((await result).content).toMatch(/cancelled/i);
  });

  it('kills a running command and reports it killed when the spawner dies, and the next command gets a new spawner', async () => {
    const { ready, result } = runUntilReady();
    await ready;
    const spawner = await spawnerOf('tether-spawner-test');
    const launchers = await childrenOf(spawner);
    expect(launchers.length).toBeGreaterThan(0);
    process.kill(spawner, 'SIGKILL');
    const killed = await result;
    expect(killed.ok).toBe(false);
    expect(killed.content).toMatch(/SIGKILL/);
    for (let i = 0; i < 100 && launchers.some(isProcessAlive); i++) await delay(20);
    expect(launchers.filter(isProcessAlive)).toEqual([]);
    const again = await invoke(fx.tool('bash', { sandbox }), { command: 'echo again' });
    expect(again).toEqual({ ok: true, content: 'Exit code: 0\nOutput:\nagain\n' });
    expect(commandSpawnerPids()).not.toContain(spawner);
  });

  it('runs commands as before with the worker spawning them itself (a host without perl)', async () => {
    useCommandSpawner(false);
    const tool = fx.tool('bash', { sandbox });
    // Under bubblewrap, a root worker's commands run unprivileged.
    const uid = sandbox === 'bwrap' ? (user?.uid ?? process.getuid?.()) : process.getuid?.();
    // The second runs in the sandbox prepared after the first.
    for (let i = 0; i < 2; i++) {
      expect(await invoke(tool, { command: 'id -u; echo err >&2; exit 3' })).toEqual({
        ok: false,
        content: `Exit code: 3\nOutput:\n${uid}\nerr\n`,
        code: 'ERR_TOOL_BASH_EXIT',
      });
    }
    const cancel = new AbortController();
    const { ready, result } = runUntilReady(cancel.signal);
    await ready;
    cancel.abort();
    expect((await result).content).toMatch(/cancelled/i);
    await tool.close?.();
  });
});
