import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, inTerminal, killAllSpawned, spawnNode, type TestProcess } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const START = fileURLToPath(new URL('../scripts/start.mjs', import.meta.url));
const DEMO = fileURLToPath(new URL('../scripts/demo.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../packages/client/dist/cli.js', import.meta.url));

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

afterAll(killAllSpawned);

/** Is `pid` a running process? */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

interface StackFile {
  version: number;
  pid: number;
  apiUrl: string;
  consoleUrl: string;
  redisUrl: string;
  pids: { start: number; api: number; redis: number; workers: Record<string, number> };
}

describe('pnpm start', () => {
  // One stack for the tests below, in order: TETHER_HOME is a `.tether` folder, as in a clone, so a
  // CLI started under its parent finds the stack file by itself.
  let dir: string;
  let home: string;
  let port: number;
  let redisPort: number;
  let stack: TestProcess;
  const stackFile = () => JSON.parse(readFileSync(join(home, 'stack.json'), 'utf8')) as StackFile;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tether-start-'));
    home = join(dir, '.tether');
    port = await freePort();
    redisPort = await freePort();
    // No REDIS_URL: the script starts its own redis-server with its data under TETHER_HOME.
    stack = spawnNode(START, { TETHER_HOME: home, NO_COLOR: '1' }, [
      '--port',
      String(port),
      '--redis-port',
      String(redisPort),
      '--workers',
      '2',
    ]);
    await stack.waitFor(/Tether is up[\s\S]*stack file: /, 60_000);
  }, 90_000);
  afterAll(async () => {
    await stack?.stop('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('starts Redis on --redis-port, the API and workers, reaches /readyz, and says how to configure a model', async () => {
    const up = stack.output().match(/Tether is up at (\S+) .*Redis redis:\/\/127\.0\.0\.1:(\d+)/);
    expect(up?.[1]).toBe(`http://127.0.0.1:${port}`);
    expect(Number(up?.[2])).toBe(redisPort);
    // No model in this environment: the banner says how to configure one, and suggests no run that would fail.
    const banner = (await stack.waitFor(/Tether is up[\s\S]*stop: Ctrl-C/, 5_000))[0];
    expect(banner).toContain('No model is configured');
    for (const line of [
      /OPENAI_API_KEY=sk-… pnpm start +OpenAI \(gpt-5\.4-mini\)/,
      /OPENAI_BASE_URL=http:\/\/localhost:11434\/v1 pnpm start +Ollama, vLLM, DeepSeek, Qwen/,
      /ANTHROPIC_API_KEY=sk-ant-… pnpm start +Anthropic \(claude-sonnet-5-5\)/,
    ]) {
      expect(banner).toMatch(line);
    }
    expect(banner).not.toContain('pnpm tether run');
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(stack.output()).toMatch(/worker-2 .*worker ready/);
    expect(await reachable(redisPort)).toBe(true);
  });

  it('writes .tether/stack.json: the API and Redis URLs and every pid, readable by its owner only', () => {
    const file = stackFile();
    expect(file).toMatchObject({
      version: 1,
      pid: stack.child.pid,
      apiUrl: `http://127.0.0.1:${port}`,
      consoleUrl: `http://127.0.0.1:${port}/console/`,
      redisUrl: `redis://127.0.0.1:${redisPort}`,
    });
    expect(file.pids.start).toBe(stack.child.pid);
    expect(Object.keys(file.pids.workers).sort()).toEqual(['worker-1', 'worker-2']);
    for (const pid of [file.pids.api, file.pids.redis, ...Object.values(file.pids.workers)]) {
      expect(alive(pid), String(pid)).toBe(true);
    }
    expect(statSync(join(home, 'stack.json')).mode & 0o777).toBe(0o600);
  });

  it('a second start on a busy API or Redis port fails fast, naming the port and its flag, starting nothing', async () => {
    const otherHome = join(dir, 'other');
    // A free port of its own for each start that may probe one: the three run at once, and one's
    // probe of a port shared with another made that one see it busy (on a loaded machine).
    const [free, alsoFree, forRedis, forSame] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const second = (home: string, apiPort: number, ownRedisPort: number) =>
      spawnNode(START, { TETHER_HOME: home, NO_COLOR: '1' }, [
        '--port',
        String(apiPort),
        '--redis-port',
        String(ownRedisPort),
      ]);
    // Three at once: a busy API port, a busy Redis port, and free ports with the running stack's home
    // (its Redis data, its stack file).
    const [busyApi, busyRedis, sameHome] = [
      second(otherHome, port, free),
      second(otherHome, forRedis, redisPort),
      second(home, forSame, alsoFree),
    ] as const;
    expect((await busyApi.exited).code).toBe(1);
    // (It says a Tether API answers there when /readyz answers in time: not asserted, as on a loaded machine it may not.)
    expect(busyApi.output()).toMatch(new RegExp(`port ${port} is in use.*--port ${port + 1}`));
    expect((await busyRedis.exited).code).toBe(1);
    expect(busyRedis.output()).toMatch(new RegExp(`port ${redisPort} is in use.*--redis-port`));
    for (const refused of [busyApi, busyRedis]) {
      expect(refused.output()).not.toMatch(/Tether is up|building|Ready to accept connections/);
    }
    expect(existsSync(otherHome)).toBe(false);
    expect((await sameHome.exited).code).toBe(1);
    expect(sameHome.output()).toContain(
      `another pnpm start (pid ${stack.child.pid}, API http://127.0.0.1:${port}) runs with ${home}`,
    );
    // The first stack's file is left alone.
    expect(stackFile().pid).toBe(stack.child.pid);
  });

  it('the CLI finds the API in stack.json, also installed outside the repository; TETHER_URL and --url win', async () => {
    const below = join(dir, 'project', 'src');
    await mkdir(below, { recursive: true });
    // The built CLI as an installed one runs it: in the caller's directory, no TETHER_URL. Three at once.
    const dead = await freePort();
    const [found, ...refused] = [
      spawnNode(CLI, { NO_COLOR: '1' }, ['runs'], { cwd: below }),
      spawnNode(CLI, { NO_COLOR: '1', TETHER_URL: `http://127.0.0.1:${dead}` }, ['runs'], { cwd: below }),
      spawnNode(CLI, { NO_COLOR: '1' }, ['runs', '--url', `http://127.0.0.1:${dead}`], { cwd: below }),
    ];
    expect(await found?.exited, found?.output()).toEqual({ code: 0, signal: null });
    for (const cli of refused) {
      expect((await cli.exited).code).toBe(3);
      expect(cli.output()).toContain(`Cannot reach the Tether API at http://127.0.0.1:${dead}`);
    }
  });

  it('restarts a worker killed with -9, logging the crash and the delay, and updates stack.json', async () => {
    const before = stackFile().pids.workers['worker-1'] as number;
    process.kill(before, 'SIGKILL');
    await stack.waitFor(
      /worker-1 crashed \(signal SIGKILL\) after [\d.]+ s; restarting in 1 s \(crash 1 in a row\)/,
      10_000,
    );
    const back = await stack.waitFor(/worker-1 restarted \(pid (\d+)\)/, 30_000);
    const after = Number(back[1]);
    expect(after).not.toBe(before);
    expect(stackFile().pids.workers['worker-1']).toBe(after);
    expect(stack.output()).not.toMatch(/stopping the stack/);
    const ready = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as {
      workers: { id: string }[];
    };
    expect(ready.workers.map((worker) => worker.id).sort()).toEqual(['worker-1', 'worker-2']);
  });

  it('runs pnpm demo against the stack from stack.json (no TETHER_URL)', async () => {
    const demo = inTerminal([DEMO], { TETHER_HOME: home, NO_COLOR: '1' });
    await demo.waitFor(/Should I leave a note of the change in NOTES\.md\?/, 30_000);
    expect(demo.screen()).toMatch(/strategy: line_trimmed/);
    expect(demo.screen()).toMatch(/Hello, Tether!/);
    demo.type('1');
    demo.type('\r');
    await demo.waitFor(/Completed/, 30_000);
    expect(await demo.exited).toBe(0);
    expect(demo.screen()).toMatch(/NOTES\.md/);
  });

  it('stops cleanly on Ctrl-C: no redis-server left, stack.json removed', async () => {
    expect(await stack.stop('SIGINT')).toEqual({ code: 0, signal: null });
    expect(stack.output()).toMatch(/api .*stopped/);
    expect(await reachable(redisPort)).toBe(false);
    const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(`redis-server 127.0.0.1:${redisPort}`));
    expect(left).toEqual([]);
    expect(existsSync(join(home, 'stack.json'))).toBe(false);
  });
});

describe('pnpm start without a stack', () => {
  it("prints its own options for --help, also after pnpm's `--`", async () => {
    for (const args of [['--help'], ['--', '--help']]) {
      const help = spawnNode(START, { NO_COLOR: '1' }, args);
      expect((await help.exited).code).toBe(0);
      expect(help.output()).toMatch(/Usage: pnpm start \[--workers N\] \[--port P\] \[--redis-port R\]/);
      expect(help.output()).toMatch(/--redis-port R +the own redis-server's port \(default 6380\)/);
    }
  });

  it('refuses --redis-port with REDIS_URL', async () => {
    const both = spawnNode(START, { NO_COLOR: '1', REDIS_URL: 'redis://127.0.0.1:1' }, [
      '--redis-port',
      '7000',
    ]);
    expect((await both.exited).code).toBe(2);
    expect(both.output()).toMatch(/--redis-port is the port of the stack's own redis-server, but REDIS_URL/);
  });

  it('says how to get Redis when there is none', async () => {
    const home = await mkdtemp(join(tmpdir(), 'tether-start-'));
    try {
      const stack = spawnNode(START, { TETHER_HOME: home, NO_COLOR: '1', PATH: '/nonexistent' });
      expect((await stack.exited).code).toBe(2);
      expect(stack.output()).toMatch(/apt-get install -y redis-server/);
      expect(stack.output()).toMatch(/docker compose up -d redis/);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
