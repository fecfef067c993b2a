/** pnpm start's command line and its restart backoff (scripts/start/*.mjs), without starting anything. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
const { leftovers }: { leftovers(path: string): number[] } = await import(
  new URL('../scripts/start/stack-file.mjs', import.meta.url).href
);

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

describe('the processes a killed pnpm start left', () => {
  it("lists the stale stack file's processes that still run, and nothing while its pnpm start runs", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-leftovers-'));
    try {
      const file = join(dir, 'stack.json');
      const dead = Number(
        spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
          .stdout,
      );
      const write = (pid: number) =>
        writeFileSync(
          file,
          JSON.stringify({
            pid,
            pids: { api: process.pid, redis: dead, workers: { 'worker-1': process.ppid } },
          }),
        );
      write(dead);
      expect(leftovers(file)).toEqual([process.pid, process.ppid]);
      write(process.pid);
      expect(leftovers(file)).toEqual([]);
      expect(leftovers(join(dir, 'none.json'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
