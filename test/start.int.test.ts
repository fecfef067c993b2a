import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, inTerminal, killAllSpawned, spawnNode, type TestProcess } from '@tether/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const START = fileURLToPath(new URL('../scripts/start.mjs', import.meta.url));
const DEMO = fileURLToPath(new URL('../scripts/demo.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../packages/client/dist/cli.js', import.meta.url));
// A plain script without types: loaded by URL, typed here. Undefined for a process that is gone.
const { processStartTime }: { processStartTime(pid: number): string | undefined } = await import(
  new URL('../scripts/start/stack-file.mjs', import.meta.url).href
);

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
  startTimes: Record<string, string>;
}

/** Every pid of a stack file but its pnpm start's. */
const stackPids = (file: StackFile) => [file.pids.api, file.pids.redis, ...Object.values(file.pids.workers)];

interface Delivery {
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A webhook receiver on a loopback port: each POST answered 204 and kept. */
async function receiver(): Promise<{
  url: string;
  server: Server;
  /** The delivery whose body names `runId`, once it comes. */
  deliveryOf(runId: string, timeoutMs?: number): Promise<Delivery>;
}> {
  const received: Delivery[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      response.writeHead(204).end();
      received.push({ headers: request.headers, body });
      for (const waiter of waiters) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    server,
    deliveryOf: (runId, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const delivery = received.find(({ body }) => body.includes(runId));
          if (delivery === undefined) return;
          finish();
          resolve(delivery);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no webhook delivery of run ${runId} in ${timeoutMs} ms`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      }),
  };
}

/** Is a delivery signed with `secret` (Standard Webhooks: HMAC-SHA256 over `<id>.<timestamp>.<body>`)? */
function signedWith(secret: string, { headers, body }: Delivery): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const digest = createHmac('sha256', key)
    .update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`)
    .digest('base64');
  return String(headers['webhook-signature']).split(' ').includes(`v1,${digest}`);
}

/** Submits a run the replay model ends at once; returns its id. */
async function submitRun(base: string): Promise<string> {
  const response = await fetch(`${base}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: 'x', model: { provider: 'replay', script: [{ content: 'done' }] } }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { id: string }).id;
}

describe('pnpm start', () => {
  // One stack for the tests below, in order: TETHER_HOME is a `.tether` folder, as in a clone, so a
  // CLI started under its parent finds the stack file by itself.
  let dir: string;
  let home: string;
  let port: number;
  let redisPort: number;
  let stack: TestProcess;
  let hooks: Awaited<ReturnType<typeof receiver>>;
  /** The signing secret of the webhook endpoint the tests below register. */
  let secret: string;
  /** The run whose delivery came first. */
  let firstRun: string;
  const stackFile = () => JSON.parse(readFileSync(join(home, 'stack.json'), 'utf8')) as StackFile;
  const startArgs = (workers: number) => [
    '--port',
    String(port),
    '--redis-port',
    String(redisPort),
    '--workers',
    String(workers),
  ];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tether-start-'));
    home = join(dir, '.tether');
    port = await freePort();
    redisPort = await freePort();
    hooks = await receiver();
    // No REDIS_URL: the script starts its own redis-server with its data under TETHER_HOME; no
    // TETHER_SECRETS_KEY nor TETHER_WEBHOOK_ALLOW_*: its development settings.
    stack = spawnNode(START, { TETHER_HOME: home, NO_COLOR: '1' }, startArgs(2));
    await stack.waitFor(/Tether is up[\s\S]*stack file: /, 60_000);
  }, 90_000);
  afterAll(async () => {
    await stack?.stop('SIGKILL');
    hooks?.server.close();
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
    // Its development settings, production's strict defaults named.
    expect(banner).toContain('development settings (production keeps strict defaults: docs/operations.md)');
    expect(banner).toContain(`secrets key: ${join(home, 'secrets.key')} (TETHER_SECRETS_KEY), never printed`);
    expect(banner).toMatch(
      /webhooks may go to http:\/\/ URLs and to loopback and private addresses \(TETHER_WEBHOOK_ALLOW_HTTP=1, TETHER_WEBHOOK_ALLOW_PRIVATE=1\)/,
    );
    expect(banner).toMatch(
      /MCP server connections may go to http:\/\/ URLs and to loopback and private addresses \(TETHER_MCP_ALLOW_HTTP=1, TETHER_MCP_ALLOW_PRIVATE=1\)/,
    );
    const key = readFileSync(join(home, 'secrets.key'), 'utf8').trim();
    expect(Buffer.from(key, 'base64')).toHaveLength(32);
    expect(statSync(join(home, 'secrets.key')).mode & 0o777).toBe(0o600);
    expect(stack.output()).not.toContain(key);
    // Redis's start (its banner, the kernel settings it wants) is left out.
    expect(stack.output()).not.toMatch(/overcommit|Redis version|Server initialized/);
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
    for (const pid of stackPids(file)) {
      expect(alive(pid), String(pid)).toBe(true);
      // When each started: the next start tells them from processes that got their pid since.
      expect(file.startTimes[pid], String(pid)).toMatch(/\S/);
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

  // After the worker killed with -9 above: a worker killed while it holds an endpoint's delivery job
  // holds it until its lock runs out, which would delay the deliveries below by up to that lock.
  it('takes a webhook to http://127.0.0.1 with no variable set, and delivers to it signed; and a local MCP server', async () => {
    const base = `http://127.0.0.1:${port}`;
    const created = await fetch(`${base}/v1/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: hooks.url, events: ['run.completed'] }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    secret = ((await created.json()) as { secret: string }).secret;
    firstRun = await submitRun(base);
    const delivery = await hooks.deliveryOf(firstRun);
    expect(JSON.parse(delivery.body)).toMatchObject({ type: 'run.completed' });
    expect(signedWith(secret, delivery)).toBe(true);
    // So may an MCP server on this machine be registered, its header sealed with the stack's key.
    const mcp = await fetch(`${base}/v1/mcp-servers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'local',
        url: 'http://127.0.0.1:8000/mcp',
        headers: { Authorization: 'Bearer local' },
      }),
    });
    expect(mcp.status, await mcp.clone().text()).toBe(201);
  });

  it('logs one line per request, none at info for probes and polling reads', async () => {
    const base = `http://127.0.0.1:${port}`;
    const from = stack.output().length;
    // What the console polls every 2 s, a run read as the CLI waits for it, and a probe.
    for (const path of ['/v1/runs?limit=2', '/v1/sessions', `/v1/runs/${firstRun}`, '/healthz']) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(200);
    }
    // The API writes its lines in order: once this one is out, any of those above would be too.
    expect((await fetch(`${base}/v1/tools`)).status).toBe(200);
    await stack.waitFor(/api +INFO +GET \/v1\/tools 200 [\d.]+ ms\n/, 5_000);
    const since = stack.output().slice(from);
    expect(since.match(/GET \/v1\/tools/g)).toHaveLength(1);
    expect(since).not.toMatch(/\/v1\/runs|\/v1\/sessions|\/healthz/);
    expect(stack.output()).not.toMatch(/incoming request|request completed/);
  });

  it('after a start killed with -9, the next one stops what it left, comes up on the same ports, with the same key', async () => {
    const before = stackFile();
    const key = readFileSync(join(home, 'secrets.key'), 'utf8');
    // The start script alone: its API, workers and Redis, each in a group of its own, run on.
    expect(await stack.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    for (const pid of [before.pids.api, before.pids.redis]) expect(alive(pid), String(pid)).toBe(true);

    stack = spawnNode(START, { TETHER_HOME: home, NO_COLOR: '1' }, startArgs(1));
    const stopped = await stack.waitFor(
      /stopped what a pnpm start killed earlier left running: (.*)\n/,
      30_000,
    );
    for (const [name, pid] of [
      ['api', before.pids.api],
      ['redis', before.pids.redis],
    ] as const) {
      expect(stopped[1]).toContain(`${name} (pid ${pid})`);
    }
    const up = await stack.waitFor(/Tether is up at (\S+) .*Redis redis:\/\/127\.0\.0\.1:(\d+)/, 60_000);
    expect(up[1]).toBe(`http://127.0.0.1:${port}`);
    expect(Number(up[2])).toBe(redisPort);
    for (const pid of stackPids(before)) {
      expect(processStartTime(pid), String(pid)).not.toBe(before.startTimes[pid]);
    }
    expect(stackFile().pid).toBe(stack.child.pid);
    // The same key: the new worker opens the signing secret the first stack sealed.
    expect(readFileSync(join(home, 'secrets.key'), 'utf8')).toBe(key);
    const delivery = await hooks.deliveryOf(await submitRun(`http://127.0.0.1:${port}`));
    expect(signedWith(secret, delivery)).toBe(true);
  });

  it('stops on Ctrl-C with one line and exit code 0: nothing left, stack.json removed', async () => {
    const file = stackFile();
    expect(await stack.stop('SIGINT')).toEqual({ code: 0, signal: null });
    expect(stack.output().split('stopping…\n')[1]).toBe('');
    expect(await reachable(redisPort)).toBe(false);
    const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.includes(`redis-server 127.0.0.1:${redisPort}`));
    expect(left).toEqual([]);
    for (const pid of stackPids(file))
      expect(processStartTime(pid), String(pid)).not.toBe(file.startTimes[pid]);
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
