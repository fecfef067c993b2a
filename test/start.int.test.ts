import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, inTerminal, killAllSpawned, spawnNode } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';

const START = fileURLToPath(new URL('../scripts/start.mjs', import.meta.url));
const DEMO = fileURLToPath(new URL('../scripts/demo.mjs', import.meta.url));

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

describe('pnpm start', () => {
  it('starts Redis, the API and workers, reaches /readyz, runs the demo, and stops cleanly on Ctrl-C leaving no redis-server', async () => {
    const home = await mkdtemp(join(tmpdir(), 'tether-start-'));
    try {
      const port = await freePort();
      // No REDIS_URL: the script starts its own redis-server with its data under TETHER_HOME.
      const stack = spawnNode(START, { TETHER_HOME: home, NO_COLOR: '1' }, [
        '--port',
        String(port),
        '--workers',
        '2',
      ]);
      const up = await stack.waitFor(/Tether is up at (\S+) .*Redis redis:\/\/127\.0\.0\.1:(\d+)/, 60_000);
      const redisPort = Number(up[2]);
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

      // pnpm demo, at a terminal: the question is asked, the first choice taken, the run completes.
      const demo = inTerminal([DEMO], { TETHER_URL: `http://127.0.0.1:${port}`, NO_COLOR: '1' });
      await demo.waitFor(/Should I leave a note of the change in NOTES\.md\?/, 30_000);
      expect(demo.screen()).toMatch(/strategy: line_trimmed/);
      expect(demo.screen()).toMatch(/Hello, Tether!/);
      demo.type('1');
      demo.type('\r');
      await demo.waitFor(/Completed/, 30_000);
      expect(await demo.exited).toBe(0);
      expect(demo.screen()).toMatch(/NOTES\.md/);

      expect(await stack.stop('SIGINT')).toEqual({ code: 0, signal: null });
      expect(stack.output()).toMatch(/api .*stopped/);
      expect(await reachable(redisPort)).toBe(false);
      const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(`redis-server 127.0.0.1:${redisPort}`));
      expect(left).toEqual([]);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  }, 90_000);

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
