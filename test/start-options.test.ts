/**
 * pnpm start's parts (scripts/start/*.mjs) without starting a stack: its command line, its restart
 * backoff, its development settings, its log lines, and what a killed start left.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

interface Options {
  help: boolean;
  workers: number;
  port: number;
  redisPort: number;
  redisPortGiven: boolean;
}
// Plain scripts without types: loaded by URL, typed here.
const {
  parseArgs,
  DEFAULT_REDIS_PORT,
}: {
  parseArgs(argv: string[], env: Record<string, string | undefined>): Options;
  DEFAULT_REDIS_PORT: number;
} = await import(new URL('../scripts/start/options.mjs', import.meta.url).href);
const {
  RestartBackoff,
  restartDelayMs,
  STABLE_AFTER_MS,
}: {
  RestartBackoff: new () => { crashes: number; crashed(uptimeMs: number): number };
  restartDelayMs(crashes: number): number;
  STABLE_AFTER_MS: number;
} = await import(new URL('../scripts/start/restarts.mjs', import.meta.url).href);
interface Leftover {
  name: string;
  pid: number;
  startTime: string | undefined;
}
const {
  leftovers,
  isStale,
  stopLeftovers,
  killCommand,
}: {
  leftovers(path: string): Leftover[];
  isStale(path: string): boolean;
  stopLeftovers(
    processes: Leftover[],
    options?: { timeoutMs?: number },
  ): Promise<{ stopped: Leftover[]; refused: Leftover[]; running: Leftover[] }>;
  killCommand(processes: Leftover[]): string;
} = await import(new URL('../scripts/start/leftovers.mjs', import.meta.url).href);
const {
  processStartTime,
  startTimes,
}: {
  processStartTime(pid: number): string | undefined;
  startTimes(pids: number[]): Record<string, string>;
} = await import(new URL('../scripts/start/stack-file.mjs', import.meta.url).href);
const {
  developmentSettings,
  secretsKeyPath,
}: {
  developmentSettings(
    home: string,
    env: Record<string, string | undefined>,
  ): { vars: Record<string, string>; banner: string[] };
  secretsKeyPath(home: string): string;
} = await import(new URL('../scripts/start/dev-settings.mjs', import.meta.url).href);
const {
  formatRecord,
  isRedisNoise,
  createPrinter,
}: {
  formatRecord(
    label: string,
    line: string,
    options?: { stacks?: boolean },
  ): { lines: string[]; level: number; hasStack: boolean } | undefined;
  isRedisNoise(line: string): boolean;
  createPrinter(options: {
    tag: (name: string) => string;
    paint: (code: number, text: string) => string;
    stacks: boolean;
    write: (text: string) => void;
  }): { print(name: string, line: string): void; stopping(): void };
} = await import(new URL('../scripts/start/log-lines.mjs', import.meta.url).href);

describe('pnpm start options', () => {
  it('defaults to port 3000 (or PORT), Redis on a fixed port, one worker', () => {
    expect(parseArgs([], {})).toEqual({
      help: false,
      workers: 1,
      port: 3000,
      redisPort: DEFAULT_REDIS_PORT,
      redisPortGiven: false,
    });
    expect(DEFAULT_REDIS_PORT).toBe(6380);
    expect(parseArgs([], { PORT: '4000' }).port).toBe(4000);
  });

  it('reads --workers, --port and --redis-port, as `--flag v` or `--flag=v`, after a leading `--`', () => {
    expect(parseArgs(['--', '--workers', '3', '--port=4001', '--redis-port', '6500'], {})).toEqual({
      help: false,
      workers: 3,
      port: 4001,
      redisPort: 6500,
      redisPortGiven: true,
    });
  });

  it('asks for help with --help, -h or help, also after `--` (pnpm start -- --help)', () => {
    for (const argv of [['--help'], ['-h'], ['help'], ['--', '--help'], ['--workers', '2', '--help']]) {
      expect(parseArgs(argv, {}).help, argv.join(' ')).toBe(true);
    }
  });

  it('refuses what cannot run, naming the flag', () => {
    expect(() => parseArgs(['--workers', '0'], {})).toThrow('--workers must be a whole number from 1 to 64');
    expect(() => parseArgs(['--port', '70000'], {})).toThrow('--port must be a port number');
    expect(() => parseArgs(['--redis-port=x'], {})).toThrow('--redis-port must be a port number');
    expect(() => parseArgs(['--redis-port'], {})).toThrow('--redis-port needs a value');
    expect(() => parseArgs(['--port', '6380'], {})).toThrow('--port and --redis-port are both 6380');
    expect(() => parseArgs(['--nope'], {})).toThrow('unknown option --nope');
  });
});

describe('worker restart backoff', () => {
  it('waits 1 s, doubling up to 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(restartDelayMs)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it('counts crashes in a row, and starts again from 1 s after a worker stayed up a minute', () => {
    const backoff = new RestartBackoff();
    expect([backoff.crashed(500), backoff.crashed(5_000), backoff.crashed(100)]).toEqual([
      1_000, 2_000, 4_000,
    ]);
    expect(backoff.crashed(STABLE_AFTER_MS)).toBe(1_000);
    expect(backoff.crashes).toBe(1);
    expect(backoff.crashed(10)).toBe(2_000);
  });
});

/** The pid of a process that ran and is gone. */
function deadPid(): number {
  return Number(
    spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
      .stdout,
  );
}

describe('the processes a killed pnpm start left', () => {
  it("lists the stale stack file's processes that still run and are the ones it named, and nothing while its pnpm start runs", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-leftovers-'));
    try {
      const file = join(dir, 'stack.json');
      const dead = deadPid();
      const times = startTimes([process.pid, process.ppid]);
      const write = (pid: number, recorded: Record<string, string> | undefined) =>
        writeFileSync(
          file,
          JSON.stringify({
            pid,
            pids: { api: process.pid, redis: dead, workers: { 'worker-1': process.ppid } },
            ...(recorded ? { startTimes: recorded } : {}),
          }),
        );
      write(dead, times);
      expect(isStale(file)).toBe(true);
      expect(leftovers(file)).toEqual([
        { name: 'api', pid: process.pid, startTime: times[process.pid] },
        { name: 'worker-1', pid: process.ppid, startTime: times[process.ppid] },
      ]);
      // A pid whose process started at another time is another process: never named.
      write(dead, { ...times, [process.pid]: 'another' });
      expect(leftovers(file).map(({ name }) => name)).toEqual(['worker-1']);
      // An older start's file, without start times: named, without one.
      write(dead, undefined);
      expect(leftovers(file)).toEqual([
        { name: 'api', pid: process.pid, startTime: undefined },
        { name: 'worker-1', pid: process.ppid, startTime: undefined },
      ]);
      // Its pnpm start runs: nothing is left over. Its pid with another start time: it is gone.
      write(process.pid, times);
      expect(isStale(file)).toBe(false);
      expect(leftovers(file)).toEqual([]);
      write(process.pid, { ...times, [process.pid]: 'another' });
      expect(isStale(file)).toBe(true);
      expect(leftovers(join(dir, 'none.json'))).toEqual([]);
      expect(isStale(join(dir, 'none.json'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("tells a process's start time, none for one that is gone", () => {
    expect(processStartTime(process.pid)).toMatch(/\S/);
    expect(processStartTime(process.pid)).toBe(processStartTime(process.pid));
    expect(processStartTime(deadPid())).toBeUndefined();
  });

  it('stops each process group (a child of the process too), SIGKILL for one that ignores SIGTERM; names the command', async () => {
    // A leader in a group of its own, as pnpm start spawns them, with a child in its group; and one
    // that ignores SIGTERM.
    const leader = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
         process.stdout.write(String(c.pid) + '\\n'); setInterval(() => {}, 1000);`,
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const stubborn = spawn(
      process.execPath,
      [
        '-e',
        "process.on('SIGTERM', () => {}); process.stdout.write('ready\\n'); setInterval(() => {}, 1000);",
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const firstLine = (child: typeof leader) =>
      new Promise<string>((resolve) =>
        child.stdout?.once('data', (chunk: Buffer) => resolve(String(chunk).trim())),
      );
    const childPid = Number(await firstLine(leader));
    await firstLine(stubborn);
    const entries = [leader, stubborn].map((child, i) => ({
      name: i === 0 ? 'api' : 'redis',
      pid: child.pid as number,
      startTime: processStartTime(child.pid as number),
    }));
    expect(killCommand(entries)).toBe(`kill -TERM -- -${leader.pid} -${stubborn.pid}`);
    // A recorded start time that is not the process's: left alone.
    const other = { name: 'worker-1', pid: process.pid, startTime: 'another' };
    const result = await stopLeftovers([...entries, other], { timeoutMs: 500 });
    expect(result.stopped.map(({ name }) => name)).toEqual(['api', 'redis']);
    expect(result.refused).toEqual([]);
    expect(result.running).toEqual([]);
    // The leader's child got the group's SIGTERM too (it is not this process's child: polled).
    await expect.poll(() => processStartTime(childPid)).toBeUndefined();
    expect(stubborn.signalCode ?? (await new Promise((r) => stubborn.once('exit', (_c, s) => r(s))))).toBe(
      'SIGKILL',
    );
  });
});

describe("pnpm start's development settings", () => {
  it('makes a secrets key file (mode 0600) once and reads it after, and allows webhooks to local http', () => {
    const home = mkdtempSync(join(tmpdir(), 'tether-dev-'));
    try {
      const first = developmentSettings(home, {});
      expect(first.vars).toEqual({
        TETHER_SECRETS_KEY: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/),
        TETHER_WEBHOOK_ALLOW_HTTP: '1',
        TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
        TETHER_MCP_ALLOW_HTTP: '1',
        TETHER_MCP_ALLOW_PRIVATE: '1',
        TETHER_ALLOW_REPLAY: '1',
      });
      expect(Buffer.from(first.vars.TETHER_SECRETS_KEY as string, 'base64')).toHaveLength(32);
      expect(statSync(secretsKeyPath(home)).mode & 0o777).toBe(0o600);
      expect(readFileSync(secretsKeyPath(home), 'utf8').trim()).toBe(first.vars.TETHER_SECRETS_KEY);
      expect(developmentSettings(home, {}).vars.TETHER_SECRETS_KEY).toBe(first.vars.TETHER_SECRETS_KEY);
      const banner = first.banner.join('\n');
      expect(banner).toContain('development settings (production keeps strict defaults: docs/operations.md)');
      expect(banner).toContain(`secrets key: ${secretsKeyPath(home)}`);
      expect(banner).toContain('TETHER_WEBHOOK_ALLOW_HTTP=1, TETHER_WEBHOOK_ALLOW_PRIVATE=1');
      expect(banner).toContain(
        'MCP server connections may go to http:// URLs and to loopback and private addresses (TETHER_MCP_ALLOW_HTTP=1, TETHER_MCP_ALLOW_PRIVATE=1)',
      );
      expect(banner).not.toContain(first.vars.TETHER_SECRETS_KEY);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('never overrides what the user set, and refuses a key file that holds no key, naming it', () => {
    const home = mkdtempSync(join(tmpdir(), 'tether-dev-'));
    try {
      const env = {
        TETHER_SECRETS_KEY: 'k'.repeat(64),
        TETHER_WEBHOOK_ALLOW_HTTP: '0',
        TETHER_WEBHOOK_ALLOW_PRIVATE: '1',
        TETHER_MCP_ALLOW_HTTP: 'false',
        TETHER_MCP_ALLOW_PRIVATE: 'false',
        TETHER_ALLOW_REPLAY: '0',
      };
      expect(developmentSettings(home, env)).toEqual({ vars: {}, banner: [] });
      expect(() => statSync(secretsKeyPath(home))).toThrow();
      const some = developmentSettings(home, {
        TETHER_WEBHOOK_ALLOW_PRIVATE: '0',
        TETHER_MCP_ALLOW_HTTP: '0',
      });
      expect(Object.keys(some.vars).sort()).toEqual([
        'TETHER_ALLOW_REPLAY',
        'TETHER_MCP_ALLOW_PRIVATE',
        'TETHER_SECRETS_KEY',
        'TETHER_WEBHOOK_ALLOW_HTTP',
      ]);
      expect(some.banner.join('\n')).toContain(
        'MCP server connections may go to loopback and private addresses (TETHER_MCP_ALLOW_PRIVATE=1)',
      );
      writeFileSync(secretsKeyPath(home), 'not a key\n');
      expect(() => developmentSettings(home, {})).toThrow(`${secretsKeyPath(home)} is not a secrets key`);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe("pnpm start's log lines", () => {
  const record = (fields: object) => JSON.stringify({ level: 30, time: 0, pid: 1, hostname: 'h', ...fields });

  it('prints a request as one line: method, URL, status, time; its reqId only when it failed', () => {
    const line = (status: number) =>
      formatRecord(
        'api',
        record({
          reqId: 'r-1',
          req: { method: 'GET', url: '/v1/tools', remoteAddress: '127.0.0.1' },
          res: { statusCode: status },
          responseTime: 1.234,
          msg: 'request completed',
        }),
      )?.lines;
    expect(line(200)).toEqual(['00:00:00.000 api INFO  GET /v1/tools 200 1.2 ms']);
    expect(line(503)).toEqual(['00:00:00.000 api INFO  GET /v1/tools 503 1.2 ms reqId=r-1']);
  });

  it('prints an error as one line (its message and code), its stack only when asked', () => {
    const failed = record({
      level: 50,
      reqId: 'r-2',
      err: {
        type: 'ApiError',
        message: 'TETHER_SECRETS_KEY is not set',
        stack: 'ApiError: TETHER_SECRETS_KEY is not set\n    at secretBox (endpoints.js:18:11)',
        code: 'ERR_SECRETS_KEY_MISSING',
        statusCode: 503,
      },
      msg: 'request failed',
    });
    expect(formatRecord('api', failed)).toEqual({
      lines: [
        '00:00:00.000 api ERROR request failed: TETHER_SECRETS_KEY is not set (ERR_SECRETS_KEY_MISSING) reqId=r-2',
      ],
      level: 50,
      hasStack: true,
    });
    expect(formatRecord('api', failed, { stacks: true })?.lines).toEqual([
      '00:00:00.000 api ERROR request failed: TETHER_SECRETS_KEY is not set (ERR_SECRETS_KEY_MISSING) reqId=r-2',
      '    ApiError: TETHER_SECRETS_KEY is not set',
      '        at secretBox (endpoints.js:18:11)',
    ]);
    expect(formatRecord('api', 'not JSON')).toBeUndefined();
  });

  it("leaves out redis-server's start and shutdown chatter, not its other warnings", () => {
    for (const line of [
      '2353:C 03 Dec 2026 04:10:04.769 # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo',
      '2353:C 03 Dec 2026 04:10:04.769 # Redis version=7.0.15, bits=64, commit=00000000, modified=0, pid=2353, just started',
      "2353:M 03 Dec 2026 04:10:04.769 # WARNING Memory overcommit must be enabled! Without it, a background save or replication may fail under low memory condition. To fix this issue add 'vm.overcommit_memory = 1' to /etc/sysctl.conf",
      '2353:signal-handler (1796271020) Received SIGTERM scheduling shutdown...',
      '2353:M 03 Dec 2026 04:10:20.165 # Redis is now ready to exit, bye bye...',
    ]) {
      expect(isRedisNoise(line), line).toBe(true);
    }
    expect(
      isRedisNoise("2353:M 03 Dec 2026 04:10:04.769 # Can't open the append-only file: Permission denied"),
    ).toBe(false);
  });

  it('once stopping, prints only warnings and errors; says once how to see stacks', () => {
    const written: string[] = [];
    const printer = createPrinter({
      tag: (name) => name,
      paint: (_c, text) => text,
      stacks: false,
      write: (t) => written.push(t),
    });
    const error = record({ level: 50, err: { message: 'boom', stack: 'Error: boom' }, msg: 'failed' });
    printer.print('api', error);
    printer.print('api', error);
    printer.print('redis', '1:M 03 Dec 2026 04:10:04.769 # Server initialized');
    printer.stopping();
    printer.print('api', record({ msg: 'stopped' }));
    printer.print('worker-1', record({ level: 40, msg: 'worker shutting down slowly' }));
    expect(written).toEqual([
      '00:00:00.000 api ERROR failed: boom',
      '  (errors print without their stacks: LOG_LEVEL=debug pnpm start shows them)',
      '00:00:00.000 api ERROR failed: boom',
      '00:00:00.000 worker-1 WARN  worker shutting down slowly',
    ]);
  });
});
