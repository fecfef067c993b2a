import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { RunEventInput } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { leaseKeeperPids } from '../command-lease.js';
import { isProcessAlive } from '../process-tree.js';
import { probeBwrap, SANDBOX_PATH } from '../sandbox.js';
import { callContext, createFixture, type Fixture, invoke } from '../testing/fixtures.js';
import type { RunContext, ToolResult } from '../types.js';

const probe = await probeBwrap();
const bwrapSkipReason = probe.ok ? '' : `bubblewrap does not work on this host (${probe.detail})`;
if (!probe.ok) console.warn(`Skipping bwrap-only bash tests: ${bwrapSkipReason}`);

let fx: Fixture;

beforeEach(async () => {
  fx = await createFixture();
});

afterEach(async () => {
  await fx.cleanup();
});

/** Live pids whose argv[0] starts with `token-`, from the host's /proc. */
async function pidsWithToken(token: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv0 = (await readFile(`/proc/${name}/cmdline`, 'utf8')).split('\0')[0] ?? '';
      if (argv0.startsWith(`${token}-`) && isProcessAlive(Number(name))) pids.push(Number(name));
    } catch {
      // Exited while scanning.
    }
  }
  return pids;
}

/**
 * A command that starts four long-lived processes that try to escape a kill:
 * a plain background child, an orphaned grandchild, a `setsid` child (new
 * session and group), and a `setsid` + double-fork orphan. It waits until all
 * four exist, prints "ready", then sleeps as the main process.
 */
function escapingTree(token: string): string {
  return [
    `T=${token}`,
    '(exec -a "$T-child" sleep 300) &',
    '( (exec -a "$T-orphan" sleep 300) & )',
    `setsid bash -c 'exec -a "$0" sleep 300' "$T-setsid" &`,
    `setsid bash -c '(exec -a "$0" sleep 300) &' "$T-setsid-orphan"`,
    'n=0',
    'until [ "$n" -ge 4 ]; do n=0; for f in /proc/[0-9]*/cmdline; do IFS= read -r -d "" a 2>/dev/null < "$f" && case "$a" in "$T"-*) n=$((n+1));; esac; done; sleep 0.01; done',
    'echo ready',
    'exec -a "$T-main" sleep 300',
  ].join('\n');
}

/** Runs bash with a context whose emit resolves `ready` when the output says "ready". */
function runUntilReady(
  args: object,
  overrides: Partial<RunContext>,
  callSignal?: AbortSignal,
): { ready: Promise<void>; result: Promise<ToolResult> } {
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const tool = fx.tool('bash', {
    ...overrides,
    emit: (event) => {
      fx.events.push(event);
      if (event.type === 'tool.output' && event.data.chunk.includes('ready')) markReady();
    },
  });
  return { ready, result: invoke(tool, args, callContext(callSignal)) };
}

async function parentOf(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/**
 * Pids of the sandboxes prepared for a next command whose directory is `workspace`: the programs
 * named `tether-await` (see AWAIT and LAUNCHER in run-command.ts) started by this process or its
 * command spawner (a launcher that waits itself, without bubblewrap) or by bubblewrap, not a launcher's watchdog, a
 * fork of it under the same name.
 */
async function preparedSandboxes(workspace: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = (await readFile(`/proc/${name}/cmdline`, 'utf8')).split('\0');
      if (argv[3] !== 'tether-await' || (await readlink(`/proc/${name}/cwd`)) !== workspace) continue;
      const parent = await parentOf(Number(name));
      // Started by this process, or by its command spawner (see command-spawner.ts), or bwrap's.
      if (
        parent === process.pid ||
        (await parentOf(parent)) === process.pid ||
        (await readFile(`/proc/${parent}/comm`, 'utf8')) === 'bwrap\n'
      ) {
        pids.push(Number(name));
      }
    } catch {
      // Exited while scanning.
    }
  }
  return pids;
}

/** Polls `check` every 20 ms until it holds, for at most 10 s (a background step has no event to await). */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await check()); i++) await delay(20);
  expect(await check()).toBe(true);
}

/**
 * A logger that records, per call, whether the command ran in a prepared sandbox, and whether the
 * next one was prepared while it ran (calls back to back).
 */
function preparedLog(): { logger: RunContext['logger']; prepared: boolean[]; ahead: boolean[] } {
  const prepared: boolean[] = [];
  const ahead: boolean[] = [];
  const logger = {
    warn: () => undefined,
    info: () => undefined,
    debug: (obj: object, msg?: string) => {
      if (msg !== 'bash finished') return;
      prepared.push((obj as { prepared: boolean }).prepared);
      ahead.push((obj as { preparedAhead: boolean }).preparedAhead);
    },
  };
  return { logger, prepared, ahead };
}

function outputEvents(events: RunEventInput[]): { stream: string; chunk: string; callId: string }[] {
  return events.flatMap((event) => (event.type === 'tool.output' ? [event.data] : []));
}

describe.each([
  { sandbox: 'none' as const, skip: '' },
  { sandbox: 'bwrap' as const, skip: bwrapSkipReason },
])('bash with sandbox $sandbox', ({ sandbox, skip }) => {
  const test = it.skipIf(skip !== '');

  test('runs in the workspace, reports the exit code and streams both streams', async () => {
    const tool = fx.tool('bash', { sandbox });
    const call = callContext();
    const result = await invoke(
      tool,
      { command: 'pwd; echo out; echo err >&2; touch made.txt; exit 3' },
      call,
    );
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_BASH_EXIT' });
    expect(result.content).toMatch(/^Exit code: 3\n/);
    expect(result.content).toContain(fx.workspace);
    expect((await stat(path.join(fx.workspace, 'made.txt'))).isFile()).toBe(true);
    const events = outputEvents(fx.events);
    expect(events.every((event) => event.callId === call.callId)).toBe(true);
    expect(
      events
        .filter((e) => e.stream === 'stdout')
        .map((e) => e.chunk)
        .join(''),
    ).toBe(`${fx.workspace}\nout\n`);
    expect(
      events
        .filter((e) => e.stream === 'stderr')
        .map((e) => e.chunk)
        .join(''),
    ).toBe('err\n');

    const ok = await invoke(tool, { command: 'echo fine' });
    expect(ok).toEqual({ ok: true, content: 'Exit code: 0\nOutput:\nfine\n' });
  });

  test("passes no variable of the worker's environment, only the allow-list and the run's env", async () => {
    const secret = `sk-${randomBytes(8).toString('hex')}`;
    process.env.TETHER_PROBE_API_KEY = secret;
    try {
      const tool = fx.tool('bash', { sandbox, env: { EXTRA: 'given' } });
      const result = await invoke(tool, { command: "env; tr '\\0' '\\n' < /proc/self/environ" });
      expect(result.ok).toBe(true);
      expect(result.content).not.toContain(secret);
      expect(result.content).not.toContain('TETHER_PROBE_API_KEY');
      expect(result.content).toContain(`HOME=${fx.workspace}`);
      expect(result.content).toContain(`PATH=${SANDBOX_PATH}`);
      expect(result.content).toContain('EXTRA=given');
    } finally {
      delete process.env.TETHER_PROBE_API_KEY;
    }
  });

  test('kills the whole tree on timeout, setsid grandchildren included', async () => {
    const token = `tether-tree-${randomBytes(4).toString('hex')}`;
    const { ready, result } = runUntilReady({ command: escapingTree(token), timeout: 2 }, { sandbox });
    await ready;
    const pids = await pidsWithToken(token);
    expect(pids.length).toBeGreaterThanOrEqual(4);
    const outcome = await result;
    expect(outcome).toMatchObject({ ok: false, code: 'ERR_TOOL_BASH_TIMEOUT' });
    expect(outcome.content).toContain('Timed out after 2 s');
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(await pidsWithToken(token)).toEqual([]);
  });

  test('kills the whole tree when the call is cancelled', async () => {
    const token = `tether-cancel-${randomBytes(4).toString('hex')}`;
    const controller = new AbortController();
    const { ready, result } = runUntilReady({ command: escapingTree(token) }, { sandbox }, controller.signal);
    await ready;
    const pids = await pidsWithToken(token);
    expect(pids.length).toBeGreaterThanOrEqual(4);
    controller.abort();
    expect(await result).toMatchObject({ ok: false, code: 'ERR_TOOL_CANCELLED' });
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(await pidsWithToken(token)).toEqual([]);
  });

  test('kills the whole tree when the run is cancelled', async () => {
    const token = `tether-run-${randomBytes(4).toString('hex')}`;
    const run = new AbortController();
    const { ready, result } = runUntilReady(
      { command: escapingTree(token) },
      { sandbox, signal: run.signal },
    );
    await ready;
    expect((await pidsWithToken(token)).length).toBeGreaterThanOrEqual(4);
    run.abort();
    expect(await result).toMatchObject({ ok: false, code: 'ERR_TOOL_CANCELLED' });
    expect(await pidsWithToken(token)).toEqual([]);
  });

  test('leaves no background job behind when the command exits', async () => {
    const token = `tether-bg-${randomBytes(4).toString('hex')}`;
    const tool = fx.tool('bash', { sandbox });
    const result = await invoke(tool, {
      command: [
        `T=${token}`,
        '(exec -a "$T-bg" sleep 300) &',
        `setsid bash -c 'exec -a "$0" sleep 300' "$T-bg2" &`,
        'n=0',
        'until [ "$n" -ge 2 ]; do n=0; for f in /proc/[0-9]*/cmdline; do IFS= read -r -d "" a 2>/dev/null < "$f" && case "$a" in "$T"-*) n=$((n+1));; esac; done; sleep 0.01; done',
        'echo started',
      ].join('\n'),
    });
    expect(result).toEqual({ ok: true, content: 'Exit code: 0\nOutput:\nstarted\n' });
    expect(await pidsWithToken(token)).toEqual([]);
  });

  test("dies at once when the worker's lease keeper ends, and the next command gets a new keeper", async () => {
    // A lease of its own (a keeper of its own), long enough that only the keeper's end can kill.
    const lease = { sandbox, commandLeaseMs: 600_000 + (sandbox === 'bwrap' ? 1 : 0) };
    const before = new Set(leaseKeeperPids());
    const started = Date.now();
    const { ready, result } = runUntilReady({ command: 'echo ready; exec sleep 300' }, lease);
    await ready;
    const keepers = leaseKeeperPids().filter((pid) => !before.has(pid));
    expect(keepers).toHaveLength(1);
    process.kill(keepers[0] as number, 'SIGKILL');
    const killed = await result;
    expect(killed.ok).toBe(false);
    expect(killed.content).toMatch(/SIGKILL/);
    expect(Date.now() - started).toBeLessThan(20_000);
    const again = await invoke(fx.tool('bash', lease), { command: 'echo again' });
    expect(again).toEqual({ ok: true, content: 'Exit code: 0\nOutput:\nagain\n' });
    expect(leaseKeeperPids().filter((pid) => !before.has(pid) && pid !== keepers[0])).toHaveLength(1);
  });

  test('runs a later command in the sandbox prepared after the previous one, started with the same text', async () => {
    const log = preparedLog();
    const tool = fx.tool('bash', { sandbox, logger: log.logger });
    // Bytes that a line-by-line reader could lose: tabs, CR, backslashes, blank and trailing lines.
    const command = 'printf %s "$BASH_EXECUTION_STRING"; exit\n\t x \\\r\n\n  \\\n\n';
    const first = await invoke(tool, { command });
    const second = await invoke(tool, { command });
    expect(first).toEqual({ ok: true, content: `Exit code: 0\nOutput:\n${command}` });
    expect(second).toEqual(first);
    // Only the shell's own variables besides the allow-list, as in a sandbox started for the command.
    const env = 'env | cut -d= -f1 | sort | tr "\\n" " "';
    expect((await invoke(tool, { command: env })).content).toBe(
      'Exit code: 0\nOutput:\nHOME LANG NO_COLOR PATH PWD SHLVL TERM TETHER_PROCESS_TAG TMPDIR _ ',
    );
    // A command longer than a prepared sandbox reads gets one of its own; the next is prepared again.
    const long = await invoke(tool, { command: `echo ${'x'.repeat(20_000)} | wc -c` });
    expect(long.content).toBe('Exit code: 0\nOutput:\n20001\n');
    await invoke(tool, { command: 'true' });
    expect(log.prepared).toEqual([false, true, true, false, true]);
  });

  test('prepares the next sandbox while the command runs when calls come back to back, after it otherwise', async () => {
    const log = preparedLog();
    let output = '';
    const tool = fx.tool('bash', {
      sandbox,
      logger: log.logger,
      emit: (event) => {
        if (event.type === 'tool.output') output += event.data.chunk;
      },
    });
    await invoke(tool, { command: 'true' });
    // The moment the previous call returned: the next sandbox starts as soon as this command is sent.
    const call = new AbortController();
    const running = invoke(tool, { command: 'echo running; exec sleep 300' }, callContext(call.signal));
    // Once the command runs, the sandbox it took no longer waits: any that does is the next one's.
    await eventually(async () => output.includes('running'));
    await eventually(async () => (await preparedSandboxes(fx.workspace)).length === 1);
    call.abort();
    expect(await running).toMatchObject({ ok: false, code: 'ERR_TOOL_CANCELLED' });
    // A model turn apart: prepared after the command, as one sandbox per run is enough then.
    await delay(200);
    await invoke(tool, { command: 'true' });
    expect(log.ahead).toEqual([false, true, false]);
    expect(log.prepared).toEqual([false, true, true]);
    await tool.close?.();
    expect(await preparedSandboxes(fx.workspace)).toEqual([]);
  });

  test('discards the prepared sandbox when the run is cancelled and when the tool is closed', async () => {
    const run = new AbortController();
    const cancelled = fx.tool('bash', { sandbox, signal: run.signal });
    await invoke(cancelled, { command: 'true' });
    await eventually(async () => (await preparedSandboxes(fx.workspace)).length === 1);
    run.abort();
    await eventually(async () => (await preparedSandboxes(fx.workspace)).length === 0);
    const closed = fx.tool('bash', { sandbox });
    await invoke(closed, { command: 'true' });
    await eventually(async () => (await preparedSandboxes(fx.workspace)).length === 1);
    await closed.close?.();
    expect(await preparedSandboxes(fx.workspace)).toEqual([]);
    // A call after close still runs, in a sandbox started for it.
    expect(await invoke(closed, { command: 'echo after' })).toMatchObject({ ok: true });
  });

  test('cuts `yes` at the cap, keeping head and tail, with bounded memory', async () => {
    const tool = fx.tool('bash', { sandbox, limits: { bashOutputBytes: 10_000, bashStreamBytes: 50_000 } });
    const total = 1_000_000_000;
    const baseline = process.memoryUsage().arrayBuffers;
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 5);
    let result: ToolResult;
    try {
      result = await invoke(tool, { command: `yes | head -c ${total}`, timeout: 60 });
    } finally {
      clearInterval(sampler);
    }
    expect(result.ok).toBe(true);
    expect(result.content).toContain(
      `\n[... ${total - 10_000} bytes omitted of ${total}; the first 5000 and the last 5000 are shown ...]\n`,
    );
    expect(result.content.length).toBeLessThan(10_200);
    expect(result.content).toMatch(/^Exit code: 0\nOutput:\ny\ny\n/);
    expect(result.content).toMatch(/\ny\ny\n$/);
    // A gigabyte went through; keeping it (or letting it pile up unread) would show here.
    expect(peak - baseline).toBeLessThan(128 * 1024 * 1024);
    const streamed = outputEvents(fx.events);
    const streamedBytes = streamed.reduce((sum, event) => sum + Buffer.byteLength(event.chunk), 0);
    expect(streamedBytes).toBeLessThan(50_000 + 200);
    expect(streamed.at(-1)?.chunk).toContain('live output stopped after 50000 bytes');
  }, 30_000);

  test('keeps exact output when it fits, and counts what was cut when it does not', async () => {
    const tool = fx.tool('bash', { sandbox, limits: { bashOutputBytes: 1000 } });
    const fits = await invoke(tool, { command: 'head -c 1000 /dev/zero | tr "\\0" a' });
    expect(fits.content).toBe(`Exit code: 0\nOutput:\n${'a'.repeat(1000)}`);
    const cut = await invoke(tool, {
      command: 'printf "%0500d" 0 | tr 0 h; head -c 3000 /dev/zero | tr "\\0" m; printf "%0500d" 0 | tr 0 t',
    });
    expect(cut.content).toBe(
      `Exit code: 0\nOutput:\n${'h'.repeat(500)}\n[... 3000 bytes omitted of 4000; the first 500 and the last 500 are shown ...]\n${'t'.repeat(500)}`,
    );
  });

  test('applies the default timeout from the limits and lowers a timeout above the maximum', async () => {
    const short = fx.tool('bash', { sandbox, limits: { bashTimeoutMs: 300, bashMaxTimeoutMs: 1000 } });
    const timedOut = await invoke(short, { command: 'sleep 30' });
    expect(timedOut).toMatchObject({ ok: false, code: 'ERR_TOOL_BASH_TIMEOUT' });
    expect(timedOut.content).toContain('Timed out after 0.3 s');
    const lowered = await invoke(short, { command: 'echo quick', timeout: 5000 });
    expect(lowered.ok).toBe(true);
    expect(lowered.content).toContain('The requested timeout of 5000 s was lowered to the maximum, 1 s.');
  });

  test('enforces the file size and open file limits with prlimit', async () => {
    const tool = fx.tool('bash', { sandbox, limits: { bashFileSizeBytes: 4096, bashOpenFiles: 64 } });
    const big = await invoke(tool, { command: 'head -c 100000 /dev/zero > big.bin' });
    expect(big).toMatchObject({ ok: false, code: 'ERR_TOOL_BASH_EXIT' });
    expect(big.content).toMatch(/File size limit exceeded|SIGXFSZ/);
    expect((await stat(path.join(fx.workspace, 'big.bin'))).size).toBe(4096);
    const files = await invoke(tool, { command: 'ulimit -n' });
    expect(files.content).toBe('Exit code: 0\nOutput:\n64\n');
  });

  test('does not start when the call is already cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    const result = await invoke(
      fx.tool('bash', { sandbox }),
      { command: 'touch ran' },
      callContext(controller.signal),
    );
    expect(result).toMatchObject({ ok: false, code: 'ERR_TOOL_CANCELLED' });
    await expect(stat(path.join(fx.workspace, 'ran'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('bash sandbox modes', () => {
  it('logs a warning once per run in none mode', async () => {
    const tool = fx.tool('bash', { sandbox: 'none' });
    await invoke(tool, { command: 'true' });
    await invoke(tool, { command: 'true' });
    expect(fx.warnings).toHaveLength(1);
    expect(fx.warnings[0]?.msg).toMatch(/without a sandbox/);
  });

  it('refuses a command with a NUL byte, and explains a command too long to start', async () => {
    const tool = fx.tool('bash', { sandbox: 'none' });
    expect(await invoke(tool, { command: 'echo a\u0000b' })).toMatchObject({
      ok: false,
      code: 'ERR_TOOL_ARGS_INVALID',
    });
    const long = await invoke(tool, { command: `echo ${'a'.repeat(200_000)}` });
    expect(long).toMatchObject({ ok: false, code: 'ERR_TOOL_SPAWN_FAILED' });
    expect(long.content).toContain('write it to a script file');
  });

  it.skipIf(!probe.ok)('auto uses bwrap when it works: the command is in its own PID namespace', async () => {
    const result = await invoke(fx.tool('bash', { sandbox: 'auto' }), { command: 'cat /proc/1/comm' });
    expect(result.content).toBe('Exit code: 0\nOutput:\nbwrap\n');
    expect(fx.warnings).toEqual([]);
  });

  it.skipIf(!probe.ok)('bwrap: the workspace is the only writable place on the host', async () => {
    const hostDir = await mkdtemp('/var/tmp/tether-outside-');
    // Writable by anyone on the host: only the sandbox's read-only root stands in the way.
    await chmod(hostDir, 0o777);
    try {
      const tool = fx.tool('bash', { sandbox: 'bwrap' });
      const outside = await invoke(tool, { command: `echo x > ${hostDir}/pwned` });
      expect(outside).toMatchObject({ ok: false, code: 'ERR_TOOL_BASH_EXIT' });
      expect(outside.content).toContain('Read-only file system');
      // /tmp is a private tmpfs: the host's /tmp (and the directories in it) are out of reach.
      const hostTmp = await invoke(tool, { command: `echo x > ${fx.outside}/pwned` });
      expect(hostTmp.ok).toBe(false);
      const privateTmp = await invoke(tool, { command: 'echo x > /tmp/pwned && cat /tmp/pwned' });
      expect(privateTmp.ok).toBe(true);
      const inside = await invoke(tool, { command: 'echo x > in-workspace' });
      expect(inside.ok).toBe(true);
      expect(await readdir(hostDir)).toEqual([]);
      expect(await readdir(fx.outside)).toEqual([]);
      await expect(stat('/tmp/pwned')).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await readFile(path.join(fx.workspace, 'in-workspace'), 'utf8')).toBe('x\n');
    } finally {
      await rm(hostDir, { recursive: true, force: true });
    }
  });

  it.skipIf(!probe.ok)('bwrap: no network unless the run allows it', async () => {
    let connections = 0;
    const server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    try {
      const command = `echo hello > /dev/tcp/127.0.0.1/${port}`;
      const blocked = await invoke(fx.tool('bash', { sandbox: 'bwrap' }), { command });
      expect(blocked).toMatchObject({ ok: false, code: 'ERR_TOOL_BASH_EXIT' });
      expect(connections).toBe(0);
      const allowed = await invoke(fx.tool('bash', { sandbox: 'bwrap', allowNetwork: true }), { command });
      expect(allowed.ok).toBe(true);
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  });

  it.skipIf(!probe.ok)("bwrap: other processes' environments are not visible through /proc", async () => {
    const secret = `sk-${randomBytes(8).toString('hex')}`;
    const holder = spawn('sleep', ['30'], {
      env: { PATH: SANDBOX_PATH, HOLDER_SECRET: secret },
      stdio: 'ignore',
    });
    await new Promise<void>((resolve) => holder.once('spawn', resolve));
    try {
      const command = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c HOLDER_SECRET";
      // Without the sandbox, a same-user command can read it: this is what bwrap's /proc prevents.
      const exposed = await invoke(fx.tool('bash', { sandbox: 'none' }), { command });
      expect(exposed.content).not.toMatch(/Output:\n0\n$/);
      const hidden = await invoke(fx.tool('bash', { sandbox: 'bwrap' }), { command });
      expect(hidden.content).toMatch(/Output:\n0\n$/);
      expect(hidden.content).not.toContain(secret);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it.skipIf(!probe.ok)('bwrap: host unix sockets under /run are hidden', async () => {
    const result = await invoke(fx.tool('bash', { sandbox: 'bwrap' }), { command: 'ls -A /run | wc -l' });
    expect(result.content).toBe('Exit code: 0\nOutput:\n0\n');
  });
});
